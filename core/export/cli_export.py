"""``deploylens export`` and ``deploylens diagnose``: the export job headless."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from deploylens.core.command import Command
from deploylens.core.export.fixit import attach_fixes
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.verdict import exit_status, export_verdict
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
    run.add_argument("--json", action="store_true")


def run_export(request: ExportRequest, python: str | None) -> dict[str, Any]:
    """Run the export; a failure's findings get their ladder of fixes."""
    from deploylens.core.settings import AppSettings
    from deploylens.core.support.loader import load_matrix

    python = python or AppSettings.load().worker_python or None
    result: dict[str, Any] = request.run(python)
    if result.get("findings"):
        plugins, _ = load_plugins()
        try:
            matrix = load_matrix(python=python)
        except Exception:  # advice without the matrix is still advice
            matrix = None
        attach_fixes(result, matrix, plugins)
    return result


def result_text(result: dict[str, Any], show_code: bool = False) -> str:
    settings = result["settings"]
    tone, verdict = export_verdict(result)
    lines = [f"$ {result['cli']}", f"{tone.upper()}: {verdict}"]
    if result["ok"]:
        ort = result.get("ort") or {}
        worst = ort.get("max_abs_diff")
        smoke = (
            (
                ("agrees with torch" if ort.get("agrees", True) else "DIFFERS from torch")
                + (f", max |Δ| {worst:.3g}" if isinstance(worst, float) else "")
                + (f" ({ort['via']})" if ort.get("via") else "")
                + "".join(f"\n    ✗ {d}" for d in ort.get("disagreements", []))
            )
            if ort.get("ok")
            else f"not run: {ort.get('reason')}"
        )
        lines += [
            f"Exported {result['path']} with the {settings['exporter']} exporter",
            f"  opset: requested {result['requested_opset'] or 'default'}, wrote "
            f"{result['actual_opset']}; {result['nodes']} nodes; onnx.checker "
            f"{result['checker']}",
            f"  ONNX Runtime smoke test: {smoke}",
            f"  export {result['export_s']:.2f} s, checks {result['checks_s']:.2f} s",
        ]
    else:
        lines.append(f"Export FAILED with the {settings['exporter']} exporter")
    lines += [f"  warning: {w}" for w in result.get("warnings", [])]
    for finding in result.get("findings", []):
        where = " at ".join(x for x in (finding["module_path"], finding["source"]) if x)
        lines.append(
            f"✗ {finding['operator'] or finding['kind']}: {finding['message']}"
            + (f"\n    called from {where}" if where else "")
        )
        for fix in finding.get("fixes", []):
            lines.append(f"    {fix['step']}. [{fix['rung']}] {fix['title']}")
            if show_code and fix["code"]:
                lines.extend("         " + line for line in fix["code"].rstrip().splitlines())
    return "\n".join(lines)


def cmd_export(args: argparse.Namespace) -> int:
    request = ExportRequest.from_args(args).prepared(trust=args.trust)
    result = run_export(request, args.python)
    print(json.dumps(result, indent=2) if args.json else result_text(result, args.script))
    if args.script and not args.json:
        print("\n# Python reproducer\n" + result["script"])
    return exit_status(result)


def cmd_diagnose(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="deploylens-diagnose-") as scratch:
        request = ExportRequest.from_args(args).prepared(
            trust=args.trust, output=str(Path(scratch) / "model.onnx")
        )
        result = run_export(request, args.python)
    print(json.dumps(result, indent=2) if args.json else result_text(result, show_code=True))
    return exit_status(result)


COMMANDS = (
    Command("export", "export a PyTorch model to ONNX, checked", _arguments, cmd_export),
    Command(
        "diagnose",
        "try an export, explain a failure and list the fixes with code",
        _arguments,
        cmd_diagnose,
    ),
)
