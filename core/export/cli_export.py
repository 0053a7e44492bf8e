"""``deploylens export`` and ``deploylens diagnose``: the export job headless."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from deploylens.core.command import Command
from deploylens.core.export.fixit import attach_fixes
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.result import ExportResult
from deploylens.core.plugin_api import load_plugins


def _arguments(parser: argparse.ArgumentParser) -> None:
    ExportRequest.add_arguments(parser)
    run = parser.add_argument_group("running")
    run.add_argument(
        "--trust",
        action="store_true",
        help="consent to running FILE.py (remembered for this file content)",
    )
    run.add_argument("--script", action="store_true", help="also print the Python reproducer")
    run.add_argument("--python", help="worker interpreter (your training env)")
    run.add_argument("--json", action="store_true", help="the result as JSON on stdout")


def run_export(request: ExportRequest, python: str | None) -> ExportResult:
    """Run the export; a failure's findings get their ladder of fixes."""
    from deploylens.core.settings import AppSettings
    from deploylens.core.support.loader import load_matrix

    python = python or AppSettings.load().worker_python or None
    result: ExportResult = request.run(python)
    if result.findings:
        plugins, _ = load_plugins()
        try:
            matrix = load_matrix(python=python)
        except Exception:  # advice without the matrix is still advice
            matrix = None
        attach_fixes(result, matrix, plugins)
    return result


def cmd_export(args: argparse.Namespace) -> int:
    request = ExportRequest.from_args(args).prepared(trust=args.trust)
    result = run_export(request, args.python)
    print(result.to_json() if args.json else result.summary(args.script))
    if args.script and not args.json:
        print("\n# Python reproducer\n" + result.script)
    return result.verdict().exit_code


def cmd_diagnose(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="deploylens-diagnose-") as scratch:
        request = ExportRequest.from_args(args).prepared(
            trust=args.trust, output=str(Path(scratch) / "model.onnx")
        )
        result = run_export(request, args.python)
    # The scratch folder is gone once we print: never show a path to a file that no longer exists.
    kept_nothing = bool(result.path)
    if kept_nothing:
        result.path = "model.onnx"
    result.cli = result.cli.replace(str(Path(scratch) / "model.onnx"), "model.onnx")
    print(result.to_json() if args.json else result.summary(show_code=True))
    if kept_nothing and not args.json:
        print("  (diagnose keeps no file: `deploylens export` with the same arguments writes it)")
    return result.verdict().exit_code


COMMANDS = (
    Command("export", "export a PyTorch model to ONNX, checked", _arguments, cmd_export),
    Command(
        "diagnose",
        "try an export, explain a failure and list the fixes with code",
        _arguments,
        cmd_diagnose,
    ),
)
