"""``deploylens build``: settings checks and reproducers (no TensorRT needed), real builds through
the worker where TensorRT exists."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from deploylens.core.command import Command
from deploylens.core.files import atomic_write_text
from deploylens.core.trt.request import BuildRequest


def _build_arguments(parser: argparse.ArgumentParser) -> None:
    BuildRequest.add_arguments(parser)
    out = parser.add_argument_group("what to print or do")
    out.add_argument("--print-trtexec", action="store_true")
    out.add_argument("--polygraphy", action="store_true", help="print the Polygraphy line")
    out.add_argument("--migrate", action="store_true", help="show the TensorRT 11 recipe")
    out.add_argument("--script", type=Path, help="write a standalone Python build script")
    out.add_argument(
        "--build", action="store_true", help="build for real with the installed TensorRT (GPU)"
    )
    out.add_argument("--python", help="worker interpreter for --build")
    out.add_argument("--json", action="store_true")


def cmd_build(args: argparse.Namespace) -> int:
    from deploylens.core.trt.job import model_inputs
    from deploylens.core.trt.settings import (
        check,
        engine_command,
        migrate_to_11,
        polygraphy_command,
        trtexec_command,
    )

    request = BuildRequest.from_args(args)
    inputs = model_inputs(request.model)  # a clear error for a missing or corrupt model first
    if args.build:
        return _real_build(args, request)
    settings, version, model = request.settings, request.version, request.model
    report: dict[str, Any] = {"version": version}
    engine = request.engine_path
    problems = check(settings, version, inputs)
    report["problems"] = [p.__dict__ for p in problems]
    lines = [str(p) for p in problems]
    if args.migrate:
        migration = migrate_to_11(settings, model)
        report["migration"] = {**migration, "settings": migration["settings"].to_dict()}
        lines.append("TensorRT 11 recipe:")
        lines.extend(f"  {n}. {step}" for n, step in enumerate(migration["steps"], 1))
        lines.extend(f"  {d['field']}: {d['before']!r} → {d['after']!r}" for d in migration["diff"])
    elif not problems:
        if args.print_trtexec or not (args.polygraphy or args.script):
            command = trtexec_command(settings, version, model, engine)
            report["trtexec"] = command
            report["then"] = engine_command(engine)
            lines.append(command)
            lines.append(f"# then: {report['then']}  (keep trtexec's output as a log for --log)")
        if args.polygraphy:
            report["polygraphy"] = polygraphy_command(settings, model, engine)
            lines.append(report["polygraphy"])
        if args.script:
            atomic_write_text(args.script, request.python_script())
            report["script"] = str(args.script)
            lines.append(f"wrote {args.script}")
    print(json.dumps(report, indent=2) if args.json else "\n".join(lines))
    return 1 if problems and not args.migrate else 0


def _real_build(args: argparse.Namespace, request: BuildRequest) -> int:
    result = request.prepared().run(
        args.python,
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


COMMANDS = (
    Command(
        "build",
        "check TensorRT build settings for a version; print trtexec/Polygraphy lines",
        _build_arguments,
        cmd_build,
    ),
)
