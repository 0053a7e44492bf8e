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
from deploylens.core.trt.result import BuildResult


def _build_arguments(parser: argparse.ArgumentParser) -> None:
    BuildRequest.add_arguments(parser)
    out = parser.add_argument_group("what to print or do")
    out.add_argument(
        "--print-trtexec", action="store_true", help="print the equivalent trtexec line only"
    )
    out.add_argument("--polygraphy", action="store_true", help="print the Polygraphy line")
    out.add_argument("--migrate", action="store_true", help="show the TensorRT 11 recipe")
    out.add_argument("--script", type=Path, help="write a standalone Python build script")
    out.add_argument(
        "--build",
        action="store_true",
        help="build for real with the installed TensorRT (GPU), or TensorRT-RTX (no GPU needed)",
    )
    out.add_argument("--python", help="worker interpreter for --build")
    out.add_argument(
        "--trust-plugins",
        action="store_true",
        help="consent to loading the settings' plugin libraries with --build (it runs their "
        "native code; remembered for each file's content)",
    )
    out.add_argument("--json", action="store_true", help="the report as JSON on stdout")


def cmd_build(args: argparse.Namespace) -> int:
    request = BuildRequest.from_args(args)
    if args.build:  # the worker reads the model (once) and says what is wrong with it
        return _real_build(args, request)
    # imported after that branch: onnx alone was 0.2 s of a real build's CPU in this process
    from deploylens.core.model.summary import model_inputs
    from deploylens.core.trt.checks import check
    from deploylens.core.trt.commands import (
        engine_command,
        migrate_to_11,
        polygraphy_command,
        trtexec_command,
    )
    from deploylens.core.trt.flags import is_rtx

    inputs = model_inputs(request.model)  # a clear error for a missing or corrupt model first
    settings, version, model = request.settings, request.version, request.model
    report: dict[str, Any] = {"version": version}
    engine = request.engine_path
    problems = check(settings, version, inputs)
    report["problems"] = [p.__dict__ for p in problems]
    lines = [str(p) for p in problems]
    if args.migrate:
        migration = migrate_to_11(settings, model)
        report["migration"] = migration.to_dict()
        lines.append("TensorRT 11 recipe:")
        lines.extend(f"  {line}" for line in migration.lines())
    elif not problems and is_rtx(version):
        note = (
            "TensorRT-RTX ships no trtexec in its wheels; its reproducers are the Python script "
            "and the Polygraphy line (or build here: --build)."
        )
        report["note"] = note
        lines.append("# " + note)
        if args.polygraphy or not args.script:
            report["polygraphy"] = polygraphy_command(settings, model, engine, version)
            lines.append(report["polygraphy"])
        if args.script:
            atomic_write_text(args.script, request.python_script())
            report["script"] = str(args.script)
            lines.append(f"wrote {args.script}")
        elif not args.polygraphy:
            report["script_text"] = request.python_script()
            lines.append(report["script_text"].rstrip())
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
    if args.trust_plugins:
        from deploylens.core.consent import check_library, grant_consent

        for plugin in request.settings.plugins or []:
            grant_consent(check_library(plugin))
    result: BuildResult = request.prepared().run(args.python)
    print(result.to_json() if args.json else result.summary())
    exit_code: int = result.verdict().exit_code
    return exit_code


COMMANDS = (
    Command(
        "build",
        "check TensorRT build settings for a version; print trtexec/Polygraphy lines",
        _build_arguments,
        cmd_build,
    ),
)
