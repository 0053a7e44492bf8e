"""``deploylens surgery MODEL [--steps S.toml] [--fold] [--pattern NAME] [--out E.onnx]``:
replay a surgery chain headless; exit 1 when the edited model no longer matches the original."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from deploylens.core.command import Command
from deploylens.core.surgery.request import SurgeryRequest


def _arguments(parser: argparse.ArgumentParser) -> None:
    SurgeryRequest.add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--python", help="worker interpreter (default: this one)")


def cmd_surgery(args: argparse.Namespace) -> int:
    request = SurgeryRequest.from_args(args)
    report = request.run(args.python)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print(surgery_text(report))
    compare = report.get("compare") or {}
    return 1 if compare.get("passed") is False else 0


def surgery_text(report: dict[str, Any]) -> str:
    lines = [f"{report['nodes_before']} → {report['nodes_after']} nodes: {report['output']}"]
    for step in report["steps"]:
        moved = ", ".join(f"{op} {a}→{b}" for op, (a, b) in step["ops_changed"].items())
        extra = f" ({step['matches']} match(es))" if "matches" in step else ""
        lines.append(
            f"  {step['step']}{extra}: {step['nodes_before']} → {step['nodes_after']}"
            + (f"  [{moved}]" if moved else "")
        )
    for title in report.get("skipped", []):
        lines.append(f"  {title}: matched nothing — not kept as a step")
    lines.append(f"  steps saved: {report['steps_file']}")
    if "script" in report:
        lines.append(f"  reproducer: {report['script']}")
    lines.append(f"  onnx checker: {report['checker']}")
    compare = report.get("compare")
    if compare:
        if not compare["comparable"]:
            lines.append(f"  compare: not comparable — {compare['reason']}")
        else:
            worst = max((o.get("max_abs", float("inf")) for o in compare["outputs"]), default=0.0)
            verdict = {True: "PASS", False: "FAIL"}.get(
                compare["passed"], f"NOT CHECKED ({compare.get('reason', '')})"
            )
            layers = compare.get("layers", [])
            if layers:
                first = compare.get("first_diverging")
                lines.append(
                    f"  {len(layers)} shared intermediate tensors compared; first diverging: "
                    f"{first or 'none'}"
                )
            lines.append(
                f"  compare with the original: {verdict} (max abs {worst:.3g}, "
                f"atol {compare['atol']:g}, rtol {compare['rtol']:g}, seed {compare['seed']})"
            )
    trt = report.get("tensorrt")
    if trt:
        if trt["parsed"] is None:
            lines.append(f"  TensorRT parser: {trt['reason']}")
        elif trt["parsed"]:
            lines.append(f"  TensorRT parser ({trt['module']}): every node parsed")
        else:
            for finding in trt["findings"]:
                lines.append(
                    f"  TensorRT parser ({trt['module']}): "
                    f"{finding.get('node_name') or finding.get('op')}: "
                    f"{finding.get('message', '')}"
                )
    return "\n".join(lines)


COMMANDS = [
    Command(
        "surgery",
        "edit the ONNX graph: fold, patterns, extract, plugin nodes",
        _arguments,
        cmd_surgery,
    )
]
