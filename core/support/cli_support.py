"""``deploylens support``: which targets run a model, or one op / aten op everywhere."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from deploylens.core.command import Command, add_json
from deploylens.core.errors import UserError
from deploylens.core.results import Verdict, overall_exit
from deploylens.core.support.request import SampleAtenRequest, TensorRTProbeRequest
from deploylens.core.support.result import ParserProbe


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, nargs="?")
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        help="ort-cpu, ort-cuda, ort-<Provider>, trt-<version> (onnx-tensorrt's table), trt-live "
        "(the installed TensorRT's parser), trt-rtx (the installed TensorRT-RTX's parser), "
        "trt-rtx-measured or ort-cpu-measured (predicted from the measured cells, no parse); "
        "repeatable. Default: ort-cpu and trt-rtx where TensorRT-RTX is installed (the live "
        "parser wins over the table), else trt-10.1",
    )
    parser.add_argument("--op", help="an ONNX op: its opset history, ORT kernels, TensorRT rows")
    parser.add_argument("--domain", default="", help="the --op's domain (default ai.onnx)")
    parser.add_argument("--aten", help="a PyTorch op (aten::asinh): which exporter translates it")
    parser.add_argument(
        "--sample",
        help="a bundled PyTorch sample: its aten ops, exporter by "
        "exporter (torch.export dry run in the worker)",
    )
    parser.add_argument(
        "--measured",
        action="store_true",
        help="the measured matrix: every op × opset × type probed on the installed TensorRT-RTX "
        "(parse + ahead-of-time build) and ONNX Runtime CPU, cached per version; with --op its "
        "row, alone a summary (the first run probes: minutes)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="with --measured: a fixed sample of 22 ops (CI)"
    )
    parser.add_argument(
        "--refresh", action="store_true", help="rebuild the cached registries (and measurements)"
    )
    parser.add_argument("--python", help="interpreter whose torch/onnxruntime to ask")
    add_json(parser)


def cmd_support(args: argparse.Namespace) -> int:
    from deploylens.core.support.measured_types import MEASURED_LEVELS

    if not (args.model or args.op or args.aten or args.sample or args.measured):
        raise UserError("Give a MODEL, --op NAME, --aten aten::name, --sample NAME or --measured.")
    if args.quick and not (args.measured or set(args.target) & set(MEASURED_LEVELS)):
        raise UserError("--quick is for --measured and the measured targets (the probe sample).")
    if args.measured and not (args.model or args.aten or args.sample):
        return _measured(args)
    live_only = (
        args.model is not None
        and not (args.op or args.aten or args.sample)
        and bool(args.target)
        and set(args.target) <= {target for target, _, _ in LIVE_TARGETS} | set(MEASURED_LEVELS)
    )
    measured_asked = bool(set(args.target) & set(MEASURED_LEVELS))
    model = None
    if args.model and (measured_asked or not live_only):
        from deploylens.core.model.loading import read_model

        model = read_model(args.model)  # a bad file is said before the registries load
    # else only the live parser reads it, in the worker and behind the same guard: this
    # process then never imports onnx (0.2 s of CPU, a fifth of a 10k-node probe)
    # the registries (0.5 s of CPU) only where a question reads them: a live parse does not,
    # nor imports their code (0.05 s)
    matrix = None
    if not live_only:
        from deploylens.core.support import queries
        from deploylens.core.support.loader import load_matrix

        matrix = load_matrix(python=args.python, refresh=args.refresh)
    output: dict[str, Any] = {}
    texts: list[str] = []
    verdicts: dict[str, Verdict] = {}  # by target: what the exit status is made of
    if args.op:
        assert matrix is not None
        output["op"] = report = queries.op_report(matrix, args.op, args.domain)
        texts.append(queries.op_text(report))
    if args.aten:
        assert matrix is not None
        output["aten"] = report = queries.aten_report(matrix, args.aten)
        texts.append(queries.aten_text(report))
    if args.sample:
        assert matrix is not None
        ops = SampleAtenRequest(args.sample).run(args.python).ops
        rows = {op: {"calls": n, **queries.aten_report(matrix, op)} for op, n in ops.items()}
        output["sample"] = {"name": args.sample, "ops": rows}
        texts.append(f"{args.sample}: torch.export dry run")
        texts.extend(
            f"  ×{row['calls']} " + queries.aten_text(row).replace("\n", "\n    ")
            for row in rows.values()
        )
    if args.model is not None:
        wanted = args.target or default_targets(args.python)
        for target, module, key in LIVE_TARGETS:
            if target not in wanted:
                continue
            wanted = [t for t in wanted if t != target]
            live: ParserProbe = TensorRTProbeRequest(str(args.model.resolve()), module).run(
                args.python
            )
            output[key] = live.to_dict()
            texts.append(live.summary(target))
            verdicts[target] = live.verdict()
        for target, level in MEASURED_LEVELS.items():
            if target not in wanted:
                continue
            wanted = [t for t in wanted if t != target]
            from deploylens.core.support import measure

            data = measure.load_measured(args.quick, False, args.python)
            assert model is not None  # read above whenever a measured target is asked
            guess = measure.verdict(model, data, level)
            output.setdefault("measured", {})[target] = guess.to_dict()
            texts.append(guess.text(target))
            verdicts[target] = guess.verdict()
        if wanted:
            from deploylens.core.support.analysis import analyze, parse_target, report_dict

            targets = [parse_target(t) for t in wanted]
            assert matrix is not None and model is not None
            reports = analyze(model, matrix, targets)
            output["targets"] = report_dict(reports)
            texts.append(queries.reports_text(reports))
            for target_report in reports:
                verdicts[target_report.target] = target_report.verdict()
    status = overall_exit([v.exit_code for v in verdicts.values()])
    if verdicts:  # the reason for the exit status, target by target
        output["verdict"] = {
            "exit_code": status,
            "targets": {name: v.to_json_dict() for name, v in verdicts.items()},
        }
    print(json.dumps(output, indent=2) if args.json else "\n\n".join(texts))
    return status


def _measured(args: argparse.Namespace) -> int:
    """``--measured``: the op's measured row, or the matrix's summary."""
    from deploylens.core.support import measure

    data = measure.load_measured(args.quick, args.refresh, args.python)
    if args.op:
        row = measure.measured_row(data, args.op, args.domain)
        print(json.dumps(row.to_dict(), indent=2) if args.json else row.text())
        return 0 if row.cells or row.not_probed else 1
    summary = {
        "versions": data.versions,
        "seconds": data.seconds,
        "cached": data.cached,
        "tensorrt_rtx": dict(data.trt.states()),
        "ort_cpu": dict(data.ort.states()),
        "not_probed": len(data.unprobed),
        "cache": str(measure.cache_path(args.quick)),
    }
    print(json.dumps(summary, indent=2) if args.json else data.summary_text())
    return 0


LIVE_TARGETS = (
    ("trt-live", "tensorrt", "tensorrt_live"),
    ("trt-rtx", "tensorrt_rtx", "tensorrt_rtx"),
)


def default_targets(python: str | None) -> list[str]:
    """ONNX Runtime's CPU provider, and TensorRT from the live TensorRT-RTX parser where it is
    installed (a real parse beats the bundled table), else from onnx-tensorrt's 10.1 table."""
    import importlib.util

    from deploylens.core.jobs import REMOTE

    # what is installed here says nothing of another interpreter or a remote host: the table
    # there, unless --target trt-rtx asks that parser
    here = python is None and not REMOTE["host"]
    live = here and importlib.util.find_spec("tensorrt_rtx") is not None
    return ["ort-cpu", "trt-rtx" if live else "trt-10.1"]


COMMANDS = (
    Command(
        "support",
        "op support: which targets run the model, or one op / aten op everywhere",
        _arguments,
        cmd_support,
    ),
)
