"""Answers for one op or one aten op across every backend (``deploylens support --op/--aten``)."""

from __future__ import annotations

from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.model.domains import domain_name
from deploylens.core.support.analysis import TargetReport
from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.support.tensorrt_table import lookup, table_versions, tensorrt_tables


def op_report(matrix: SupportMatrix, op: str, domain: str = "") -> dict[str, Any]:
    matches = [
        k
        for k in matrix.ops()
        if k[1].lower() == op.lower() and (not domain or k[0] == domain_name(domain))
    ]
    if not matches:
        raise UserError(f"No operator named '{op}' in the ONNX spec or ONNX Runtime's kernels.")
    key = matches[0]
    history = matrix.history(*key)
    kernels: dict[str, list[str]] = {}
    for kernel in matrix.kernels.get(key, []):
        span = f"{kernel['start']}-{kernel['end'] or '…'}"
        types = ";".join(
            f"{k}:{','.join(t.replace('tensor(', '').rstrip(')') for t in v)}"
            for k, v in kernel["types"].items()
        )
        kernels.setdefault(kernel["provider"], []).append(f"{span} [{types}]")
    trt = {}
    for version in table_versions():
        table = tensorrt_tables()["versions"][version]
        row = lookup(table, key[1]) if key[0] == "ai.onnx" else None
        trt[version] = row or {"supported": "N", "types": "", "restrictions": "not in the table"}
    return {
        "op": key[1],
        "domain": key[0],
        "versions": [
            {
                "since": v.since,
                "deprecated": v.deprecated,
                "summary": v.summary,
                "type_constraints": v.type_constraints,
            }
            for v in (history.versions if history else [])
        ],
        "ort": kernels,
        "tensorrt": trt,
    }


def aten_report(matrix: SupportMatrix, aten: str) -> dict[str, Any]:
    name = aten if "::" in aten else f"aten::{aten}"
    return {
        "aten": name,
        "torchscript": {
            "opsets": matrix.torchscript_opsets(name),
            "available": matrix.torchscript.get("available"),
            "reason": matrix.torchscript.get("reason", ""),
        },
        "dynamo": {
            "overloads": matrix.dynamo_overloads(name),
            "available": matrix.dynamo.get("available"),
            "min_opset": matrix.dynamo.get("min_opset"),
            "reason": matrix.dynamo.get("reason", ""),
        },
    }


def op_text(report: dict[str, Any]) -> str:
    lines = [f"{report['domain']}::{report['op']}"]
    for v in report["versions"]:
        lines.append(
            f"  opset {v['since']:>2}{' (deprecated)' if v['deprecated'] else ''}: "
            f"{v['summary'][:110]}"
        )
    lines.append("ONNX Runtime kernels (versions [types]):")
    for provider, spans in report["ort"].items() or [("(none)", [])]:
        lines.append(f"  {provider}: {'; '.join(spans[:6])}{' …' if len(spans) > 6 else ''}")
    if not report["ort"]:
        lines.append("  none")
    lines.append("TensorRT ONNX parser (onnx-tensorrt tables):")
    for version, row in report["tensorrt"].items():
        extra = f" {row['types']}" if row.get("types") else ""
        note = f" — {row['restrictions'][:90]}" if row.get("restrictions") else ""
        lines.append(f"  {version:>6}: {row['supported']}{extra}{note}")
    return "\n".join(lines)


def aten_text(report: dict[str, Any]) -> str:
    ts, dy = report["torchscript"], report["dynamo"]
    ts_text = (
        ts["reason"]
        if not ts["available"]
        else f"symbolic at opsets {ts['opsets']}"
        if ts["opsets"]
        else "no symbolic at any opset"
    )
    dy_text = (
        dy["reason"]
        if not dy["available"]
        else f"torchlib translates it ({', '.join(dy['overloads'])}); opset >= {dy['min_opset']}"
        if dy["overloads"]
        else "no direct torchlib translation (it may still export through a decomposition)"
    )
    return f"{report['aten']}\n  TorchScript exporter: {ts_text}\n  dynamo exporter: {dy_text}"


def span_text(report: TargetReport) -> str:
    """Which opsets work, in words the verdict beside it never contradicts (the panel said
    "OK — no opset works as is" for a model that runs at its own opset)."""
    if report.opset_range:
        return f"works at opsets {report.opset_range[0]}–{report.opset_range[1]}"
    live = next((n for n in report.notes if n.startswith("answered by the installed")), "")
    if live:
        return live
    if report.ok:
        return (
            f"works at the model's opset {report.model_opset}; no other opset was checked "
            "for every operator"
        )
    return "no opset works as is"


def reports_text(reports: list[TargetReport]) -> str:
    lines = []
    for report in reports:
        span = span_text(report)
        lines.append(
            f"{report.target}: {'OK' if report.ok else 'BLOCKED'} "
            f"(model opset {report.model_opset}; {span})"
        )
        lines.extend(f"  note: {note}" for note in report.notes if note)
        for blocker in report.blockers:
            lines.append(f"  ✗ {blocker.op} ×{blocker.count}: {blocker.reason}")
            lines.append(
                f"    nodes: {', '.join(blocker.nodes[:5])}{' …' if blocker.count > 5 else ''}"
            )
            lines.extend(f"    {fix.step}. [{fix.rung}] {fix.title}" for fix in blocker.fixes)
    return "\n".join(lines)
