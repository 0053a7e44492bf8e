"""A model summary as plain text, for the CLI and reports."""

from __future__ import annotations

from deploylens.core.model.summary import ModelSummary, ValueSpec


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def shape_text(shape: list[int | str | None] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ", ".join("?" if dim is None else str(dim) for dim in shape) + "]"


def _value_line(value: ValueSpec) -> str:
    return f"  {value.name}: {value.type} {shape_text(value.shape)}"


def summary_text(summary: ModelSummary, max_ops: int = 40) -> str:
    lines = [
        f"Model       {summary.path} ({human_bytes(summary.file_bytes)})",
        f"Graph       {summary.graph_name or '(unnamed)'}",
        f"Producer    {summary.producer_name or '?'} {summary.producer_version}".rstrip(),
        f"IR version  {summary.ir_version}",
        "Opsets      "
        + (", ".join(f"{d} {v}" for d, v in sorted(summary.opset_imports.items())) or "(none)"),
        f"Inputs ({len(summary.inputs)})",
        *(_value_line(v) for v in summary.inputs),
        f"Outputs ({len(summary.outputs)})",
        *(_value_line(v) for v in summary.outputs),
        f"Nodes       {summary.node_count:,} in the main graph"
        + (
            f", {summary.subgraph_node_count:,} in {summary.subgraph_count} subgraph(s)"
            if summary.subgraph_count
            else ""
        ),
    ]
    for op in summary.op_counts[:max_ops]:
        domain = "" if op.domain == "ai.onnx" else f"{op.domain}::"
        lines.append(f"  {op.count:>7,}  {domain}{op.op_type}")
    if len(summary.op_counts) > max_ops:
        lines.append(f"  … {len(summary.op_counts) - max_ops} more op types")
    lines.append(
        f"Initializers {summary.initializer_count:,} ({human_bytes(summary.initializer_bytes)})"
    )
    for item in summary.external_data:
        state = "present" if item.present and not item.problem else "PROBLEM"
        lines.append(
            f"  external: {item.location} — {item.tensors} tensors, "
            f"{human_bytes(item.bytes_referenced)}, {state}"
        )
    if summary.functions:
        lines.append(f"Functions ({len(summary.functions)})")
        lines.extend(f"  {f.domain}::{f.name} ({f.nodes} nodes)" for f in summary.functions)
    lines.extend(f"Warning: {w}" for w in summary.warnings)
    lines.extend(f"Problem: {p}" for p in summary.problems)
    return "\n".join(lines)
