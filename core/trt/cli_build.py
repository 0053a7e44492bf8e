"""``deploylens build`` and ``deploylens calibrate``: settings checks and reproducers (no TensorRT
needed), real builds through the worker where TensorRT exists, CPU calibration everywhere."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from deploylens.core.files import atomic_write_text, input_file, input_folder


def cmd_build(args: argparse.Namespace) -> int:
    from deploylens.core.trt.job import model_inputs
    from deploylens.core.trt.script import build_script
    from deploylens.core.trt.settings import (
        BuildSettings,
        check,
        default_engine,
        engine_command,
        load_settings,
        migrate_to_11,
        polygraphy_command,
        trtexec_command,
    )

    settings = load_settings(args.settings) if args.settings else BuildSettings()
    inputs = model_inputs(str(args.model))  # a clear error for a missing or corrupt model first
    if args.build:
        return _real_build(args, settings)
    report: dict[str, Any] = {"version": args.trt_version}
    engine = args.engine or default_engine(str(args.model))
    problems = check(settings, args.trt_version, inputs)
    report["problems"] = [p.__dict__ for p in problems]
    lines = [str(p) for p in problems]
    if args.migrate:
        migration = migrate_to_11(settings, str(args.model))
        report["migration"] = {**migration, "settings": migration["settings"].to_dict()}
        lines.append("TensorRT 11 recipe:")
        lines.extend(f"  {n}. {step}" for n, step in enumerate(migration["steps"], 1))
        lines.extend(f"  {d['field']}: {d['before']!r} → {d['after']!r}" for d in migration["diff"])
    elif not problems:
        if args.print_trtexec or not (args.polygraphy or args.script):
            command = trtexec_command(settings, args.trt_version, str(args.model), engine)
            report["trtexec"] = command
            report["then"] = engine_command(engine)
            lines.append(command)
            lines.append(f"# then: {report['then']}  (keep trtexec's output as a log for --log)")
        if args.polygraphy:
            report["polygraphy"] = polygraphy_command(settings, str(args.model), engine)
            lines.append(report["polygraphy"])
        if args.script:
            atomic_write_text(
                args.script, build_script(settings, args.trt_version, str(args.model), engine)
            )
            report["script"] = str(args.script)
            lines.append(f"wrote {args.script}")
    print(json.dumps(report, indent=2) if args.json else "\n".join(lines))
    return 1 if problems and not args.migrate else 0


def _real_build(args: argparse.Namespace, settings: Any) -> int:
    from deploylens.core.jobs import run_job

    engine = args.engine or str(args.model.with_suffix(".engine"))
    params = {
        "model": str(args.model.resolve()),
        "engine": str(Path(engine).resolve()),
        "settings": settings.to_dict(),
    }
    result = run_job(
        "build.engine",
        params,
        python=args.python,
        on_progress=lambda f, m: print(f"  {m}", flush=True) if not args.json else None,
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"built {result['engine']} ({result['engine_bytes'] / 1e6:.1f} MB) with TensorRT "
            f"{result['tensorrt']} in {result['seconds']:.1f} s; "
            f"layer info: {result['layers_json']}"
        )
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from deploylens.core.jobs import run_job

    input_file(args.model, "ONNX model")
    input_folder(args.data, "calibration data")
    params: dict[str, Any] = {
        "model": str(args.model.resolve()),
        "data": str(args.data.resolve()),
        "method": args.method,
        "percentile": args.percentile,
        "preprocess": args.preprocess,
        "batch_size": args.batch_size,
        "batches": args.batches,
        "output": str(args.out.resolve()) if args.out else "",
        "evaluate": args.evaluate,
        "eval_data": str(args.eval_data.resolve()) if args.eval_data else "",
        "trt_cache": str(args.trt_cache.resolve()) if args.trt_cache else "",
        "trt_version": args.trt_version,
    }
    report = run_job("quantize.calibrate", params, python=args.python)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{report['method']}: {report['samples']} samples in {report['batches']} batches, "
        f"{report['seconds']:.2f} s ({report['samples_per_s']:.1f} samples/s); "
        f"{report['quantized_nodes']} QuantizeLinear nodes → {report['output']}"
    )
    accuracy = report.get("accuracy")
    if accuracy:
        top1 = accuracy["top1_agreement"]
        print(
            f"vs fp32 on {accuracy['samples']} samples: max abs {accuracy['max_abs']:.4g}, "
            f"rel L2 {accuracy['rel_l2']:.3g}, cosine {accuracy['cosine']:.5f}"
            + (f", top-1 agreement {top1:.1%}" if top1 is not None else "")
        )
        print(f"  accuracy measured on {accuracy['data']}")
    if report.get("trt_cache"):
        cache = report["trt_cache"]
        print(
            f"TensorRT calibration cache {cache['path']} ({cache['header']}, "
            f"{cache['tensors']} tensors)"
        )
    return 0
