"""``deploylens export`` and ``deploylens diagnose``: the export job headless."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from deploylens.core.export.fixit import attach_fixes
from deploylens.core.export.plugin_api import load_plugins, plugin_entries
from deploylens.core.export.settings import ExportSettings, parse_dynamic_axes
from deploylens.core.export.sources import grant_consent, parse_input, parse_spec
from deploylens.core.files import input_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "spec", help="sample:NAME, torchvision:NAME, FILE.py:factory, MODEL.pt, MODEL.pt2"
    )
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default="dynamo")
    parser.add_argument("--opset", type=int)
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME:SHAPE[:DTYPE]",
        help="example input, e.g. x:1x3x224x224:float32:-1:1 (repeatable)",
    )
    parser.add_argument("--inputs", help=".npz of example inputs (no pickles)")
    parser.add_argument("--output-name", action="append", default=[])
    parser.add_argument("--dynamic", action="append", default=[], metavar="TENSOR:AXIS:LABEL")
    parser.add_argument("--no-constant-folding", action="store_true")
    parser.add_argument("--no-optimize", action="store_true", help="dynamo: skip the optimizer")
    parser.add_argument("--external-data", action="store_true")
    parser.add_argument("--plugin", action="append", default=[], help="op plugin to apply")
    parser.add_argument("--out", default="model.onnx")
    parser.add_argument(
        "--trust",
        action="store_true",
        help="consent to running FILE.py (remembered for this file content)",
    )
    parser.add_argument("--script", action="store_true", help="also print the Python reproducer")
    parser.add_argument("--python", help="worker interpreter (your training env)")
    parser.add_argument("--json", action="store_true")


def _settings(args: argparse.Namespace, output: str) -> ExportSettings:
    axes = parse_dynamic_axes(args.dynamic)
    return ExportSettings(
        exporter=args.exporter,
        opset=args.opset,
        output=output,
        output_names=list(args.output_name),
        dynamic_axes=axes,
        constant_folding=not args.no_constant_folding,
        optimize=not args.no_optimize,
        external_data=args.external_data,
        plugins=list(args.plugin),
    )


def run_export(args: argparse.Namespace, output: str) -> dict[str, Any]:
    from deploylens.core.jobs import run_job
    from deploylens.core.settings import AppSettings
    from deploylens.core.support.loader import load_matrix

    source = parse_spec(args.spec)
    source.inputs = [parse_input(text) for text in args.input]
    source.inputs_npz = str(input_file(args.inputs, "inputs .npz").resolve()) if args.inputs else ""
    if source.kind == "python" and args.trust:
        grant_consent(source.target)
    python = args.python or AppSettings.load().worker_python or None
    settings = _settings(args, str(Path(output).resolve()))
    result = run_job(
        "export.run",
        {
            "source": source.to_dict(),
            "settings": settings.to_dict(),
            "plugin_entries": plugin_entries(),
        },
        python=python,
    )
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
    lines = [f"$ {result['cli']}"]
    if result["ok"]:
        ort = result.get("ort") or {}
        smoke = (
            (
                f"max |Δ| vs torch {ort['max_abs_diff']:.3g}"
                + (f" ({ort['via']})" if ort.get("via") else "")
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
    result = run_export(args, args.out)
    print(json.dumps(result, indent=2) if args.json else result_text(result, args.script))
    if args.script and not args.json:
        print("\n# Python reproducer\n" + result["script"])
    return 0 if result["ok"] else 1


def cmd_diagnose(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="deploylens-diagnose-") as scratch:
        result = run_export(args, str(Path(scratch) / "model.onnx"))
    print(json.dumps(result, indent=2) if args.json else result_text(result, show_code=True))
    return 0 if result["ok"] else 1
