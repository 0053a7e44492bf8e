"""What the properties panel shows for a node or a group, as plain rows (Qt-free, testable)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import onnx

from deploylens.core.graph.ir import KIND_NAMES, OP, GraphIR
from deploylens.core.graph.overlay import Overlay
from deploylens.core.graph.result import InitializerStats
from deploylens.core.model.dtypes import element_type_name
from deploylens.core.model.summary_text import shape_text

MAX_LIST = 16


@dataclass
class Section:
    title: str
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # name, value, detail


def tensor_text(tensor: onnx.TensorProto) -> str:
    dims = ", ".join(str(d) for d in tensor.dims)
    where = " (external)" if tensor.data_location == onnx.TensorProto.EXTERNAL else ""
    return f"tensor {element_type_name(tensor.data_type)}[{dims}]{where}"


def attribute_text(attribute: onnx.AttributeProto) -> str:
    """One line per attribute; tensors and graphs summarized, long lists cut."""
    kind = attribute.type
    if kind == onnx.AttributeProto.TENSOR:
        text = tensor_text(attribute.t)
        if math.prod(attribute.t.dims) <= 8 and attribute.t.data_location != 1:
            values = onnx.numpy_helper.to_array(attribute.t).ravel().tolist()
            text += f" = {values}"
        return text
    if kind == onnx.AttributeProto.GRAPH:
        return f"graph '{attribute.g.name}' ({len(attribute.g.node)} nodes)"
    if kind == onnx.AttributeProto.GRAPHS:
        return f"{len(attribute.graphs)} graphs"
    if kind == onnx.AttributeProto.TENSORS:
        return f"{len(attribute.tensors)} tensors"
    value = onnx.helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", "replace"))
    if isinstance(value, list):
        shown = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        cut = "" if len(shown) <= MAX_LIST else f" … (+{len(shown) - MAX_LIST})"
        return f"{shown[:MAX_LIST]}{cut}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def overlay_row(overlay: Overlay, node: int) -> tuple[str, str, str]:
    """(overlay name, the node's value as the legend writes it, the legend's words)."""
    value = overlay.values[node]
    if overlay.categorical:
        shown = overlay.categories[int(value)] if value >= 0 else "no value"
    else:
        shown = f"{float(value):.4g}" if np.isfinite(value) else "no value"
    return (overlay.name, shown, overlay.legend)


@cache
def _formal_inputs(op_type: str, domain: str) -> tuple[str, ...]:
    """The op's input names in its newest schema (Conv: X, W, B); () for a custom op."""
    try:
        return tuple(i.name for i in onnx.defs.get_schema(op_type, domain=domain).inputs)
    except onnx.defs.SchemaError:
        return ()


def weights_text(ir: GraphIR, node: int, limit: int = 3) -> str:
    """The node's weights as Netron draws them inside the box: ``W⟨64×64×1×1⟩ B⟨64⟩`` — each
    initializer (or weight passed on by an Identity/Constant) by its input's name in the op's
    schema, with its dims; read from the graph, never from the weights' data."""
    proto = ir.node_proto(node)
    if proto is None:
        return ""
    formal = _formal_inputs(proto.op_type, proto.domain)
    parts = []
    for index, name in enumerate(proto.input):
        if not name or (name not in ir.initializers and name not in ir.folded):
            continue
        typed = ir.value_types.get(name)
        dims = typed[1] if typed else None
        if name in ir.folded and typed is None:
            maker = ir.proto.node[ir.folded[name]]
            source = next((i for i in maker.input if i in ir.initializers), "")
            held = next((a.t for a in maker.attribute if a.name == "value"), None)
            if source in ir.value_types:
                dims = ir.value_types[source][1]
            elif held is not None:  # a Constant's own tensor: its dims, not its data
                dims = list(held.dims)
        shown = "×".join(str(d) for d in dims) if dims else "scalar" if dims == [] else "?"
        label = formal[min(index, len(formal) - 1)] if formal else str(index)
        parts.append(f"{label}⟨{shown}⟩")
    more = f" +{len(parts) - limit}" if len(parts) > limit else ""
    return " ".join(parts[:limit]) + more


def _tensor_row(ir: GraphIR, name: str) -> tuple[str, str, str]:
    if not name:
        return ("(none)", "", "optional input left out")
    initializer = ir.initializers.get(name)
    if initializer is not None:
        return (name, tensor_text(initializer), "initializer")
    if name in ir.folded:  # a weight passed on by an Identity or held by a Constant
        maker = ir.proto.node[ir.folded[name]]
        source = next((i for i in maker.input if i in ir.initializers), "")
        typed = ir.value_types.get(name) or ir.value_types.get(source)
        shown = f"{typed[0]} {shape_text(typed[1])}" if typed else "?"
        return (name, shown, f"weight ({maker.op_type} {source})".strip().replace(" )", ")"))
    typed = ir.value_types.get(name)
    if typed is None:
        return (name, "?", "type unknown (shape inference pending or failed)")
    return (name, f"{typed[0]} {shape_text(typed[1])}", "")


def node_sections(ir: GraphIR, node: int) -> list[Section]:
    proto = ir.node_proto(node)
    path = ir.groups.path[ir.groups.node_group[node]] or "(top level)"
    general = Section(
        "Node",
        [
            ("op", ir.op_type(node), KIND_NAMES[int(ir.kind[node])]),
            ("name", ir.label(node), ""),
            ("hierarchy", path, ir.hierarchy),
        ],
    )
    if ir.kind[node] != OP or proto is None:
        general.rows.append(_tensor_row(ir, ir.label(node)))
        return [general]
    general.rows.insert(1, ("domain", proto.domain or "ai.onnx", ""))
    sections = [general]
    attributes = Section("Attributes", [(a.name, attribute_text(a), "") for a in proto.attribute])
    sections.append(attributes)
    sections.append(Section("Inputs", [_tensor_row(ir, n) for n in proto.input]))
    sections.append(Section("Outputs", [_tensor_row(ir, n) for n in proto.output]))
    subgraphs = ir.subgraphs.get(node)
    function = ir.function_for(node)
    if subgraphs or function is not None:
        rows = [
            (name, f"{len(g.node)} nodes", "double-click to enter") for name, g in subgraphs or []
        ]
        if function is not None:
            rows.append(
                (
                    f"function {function.domain}::{function.name}",
                    f"{len(function.node)} nodes",
                    "double-click to enter",
                )
            )
        sections.append(Section("Subgraphs", rows))
    return sections


def group_sections(ir: GraphIR, group: int, anc: np.ndarray) -> list[Section]:
    depth = int(ir.groups.depth[group])
    members = np.flatnonzero(anc[depth] == group)
    ops = Counter(ir.op_type(int(n)) for n in members if ir.kind[n] == OP)
    general = Section(
        "Group",
        [
            (
                "name",
                ir.groups.name[group] or ir.title,
                "chunk" if ir.groups.synthetic[group] else "",
            ),
            ("path", ir.groups.path[group] or "(top level)", ir.hierarchy),
            ("nodes", f"{len(members):,}", "inside, at any depth"),
        ],
    )
    top = Section("Op types", [(op, f"{count:,}", "") for op, count in ops.most_common(12)])
    return [general, top]


def initializer_stats(array: np.ndarray) -> InitializerStats:
    """min/max/mean/std in float64, NaN/Inf counted, for the properties panel."""
    values = np.asarray(array)
    if values.dtype.kind not in "biuf" or not values.size:
        return InitializerStats(int(values.size))
    data = values.astype(np.float64, copy=False).ravel()
    good = data[np.isfinite(data)]
    stats = InitializerStats(int(data.size), int(np.isnan(data).sum()), int(np.isinf(data).sum()))
    if good.size:
        stats.min, stats.max = float(good.min()), float(good.max())
        stats.mean, stats.std = float(good.mean()), float(good.std())
    return stats
