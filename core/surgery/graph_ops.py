"""The surgery operations, each ModelProto in → (ModelProto, what changed) out, done with
onnx-graphsurgeon (and onnxslim for folding) so the reproducer script can call the same API.

Every operation refuses what would make a wrong model: an extraction input with no known type,
a replacement whose node set is not convex (a path leaves the set and comes back: one node in
its place would make a cycle), a dim change on a tensor that is not a graph input.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import onnx

from deploylens.core.errors import UserError
from deploylens.core.surgery.gs_io import (
    export_graph,
    find_node,
    find_tensor,
    import_graph,
    infer_shapes,
)


def op_counts(model: onnx.ModelProto) -> Counter[str]:
    return Counter(
        f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
        for n in model.graph.node
    )


def count_change(before: onnx.ModelProto, after: onnx.ModelProto) -> dict[str, Any]:
    """Nodes before/after and, per op type, how the count moved (only the ops that moved)."""
    a, b = op_counts(before), op_counts(after)
    moved = {op: [a.get(op, 0), b.get(op, 0)] for op in sorted(set(a) | set(b)) if a[op] != b[op]}
    return {
        "nodes_before": len(before.graph.node),
        "nodes_after": len(after.graph.node),
        "ops_changed": moved,
    }


# -- fold / simplify -------------------------------------------------------------------------------
def fold(
    model: onnx.ModelProto, shape_infer: bool = True
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """Constant folding, dead-node removal and onnxslim's simplifications (its fusion patterns
    included), the way ``onnxslim.slim(model)`` does them."""
    try:
        import onnxslim
    except ImportError as exc:  # onnxslim itself, or a module it needs (sympy)
        raise UserError(
            f"folding needs onnxslim, which does not import here ({exc})",
            "pip install onnxslim onnx-graphsurgeon (both in DeployLens's 'full' extra), or pick "
            "a worker interpreter that has them in Preferences",
        ) from None
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    why = ""
    try:
        slimmed = onnxslim.slim(model, no_shape_infer=not shape_infer)  # returns a new model
    except (RecursionError, MemoryError):
        raise  # the model's own trouble (a recursive function): explained with its name
    except Exception as exc:  # onnxslim's own failure (an opset-1 model: 'NoneType' …)
        slimmed, why = None, f": {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    if slimmed is None:
        raise UserError(
            f"onnxslim could not fold this model (opsets {opsets or 'none'}, IR "
            f"{model.ir_version}){why}.",
            "Convert the model to a recent opset first (onnx.version_converter), or leave the "
            "fold step out.",
        )
    slimmed.ir_version = model.ir_version  # onnxslim keeps it; said here so no step raises it
    return slimmed, count_change(model, slimmed)


# -- extract ---------------------------------------------------------------------------------------
def extract(
    model: onnx.ModelProto, inputs: list[str], outputs: list[str]
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """The subgraph between ``inputs`` and ``outputs`` tensors as a runnable model: the graph's
    inputs become those tensors (typed from shape inference), everything not needed is gone."""
    if not outputs:
        raise UserError("extract needs at least one output tensor")
    graph = import_graph(infer_shapes(model))
    new_inputs = []
    for name in inputs:
        tensor = find_tensor(graph, name)
        if tensor.dtype is None:
            raise UserError(f"tensor {name!r} has no known type: it cannot become a model input")
        if hasattr(tensor, "values"):  # a constant stays a constant, not an input
            continue
        tensor.inputs.clear()  # its producer is cut off
        new_inputs.append(tensor)
    new_outputs = []
    for name in outputs:
        tensor = find_tensor(graph, name)
        if tensor.dtype is None:
            raise UserError(f"tensor {name!r} has no known type: it cannot become a model output")
        new_outputs.append(tensor)
    graph.inputs, graph.outputs = new_inputs, new_outputs
    graph.cleanup()
    missing = _unbound_inputs(graph)
    if missing:
        raise UserError(
            f"the outputs need tensors that are not among the inputs: {', '.join(missing[:5])} — "
            "add them as inputs"
        )
    result = export_graph(graph, model)
    return result, {**count_change(model, result), "inputs": inputs, "outputs": outputs}


def _unbound_inputs(graph: Any) -> list[str]:
    """Variables that some node reads, that no node makes and that are no graph input."""
    import onnx_graphsurgeon as gs

    bound = {id(t) for t in graph.inputs}
    return sorted(
        {
            t.name
            for node in graph.nodes
            for t in node.inputs
            if isinstance(t, gs.Variable) and not t.inputs and id(t) not in bound and t.name
        }
    )


# -- replace a subgraph by one node ----------------------------------------------------------------
def replace_by_node(
    model: onnx.ModelProto,
    nodes: list[str],
    op: str,
    domain: str,
    attrs: dict[str, Any] | None = None,
    name: str = "",
    inputs: list[str] | None = None,
    outputs: list[str] | None = None,
    inherit: bool = False,
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """The named nodes replaced by one ``domain::op`` node (a plugin node). Its inputs are the
    tensors the set reads from outside (or ``inputs``, in that order), its outputs the set's
    tensors read outside it or graph outputs (or ``outputs``). With ``inherit``, the matched
    nodes' attributes come along as ``<op>_<name>`` (``conv_strides``), ``attrs`` winning."""
    if not nodes:
        raise UserError("replace needs at least one node")
    graph = import_graph(model)
    chosen = [find_node(graph, n) for n in nodes]
    ids = {id(n) for n in chosen}
    produced = {id(t) for n in chosen for t in n.outputs}
    outside_in: list[Any] = []
    for node in chosen:
        for tensor in node.inputs:
            if id(tensor) not in produced and all(tensor is not t for t in outside_in):
                outside_in.append(tensor)
    graph_outputs = {id(t) for t in graph.outputs}
    outside_out = [
        t
        for n in chosen
        for t in n.outputs
        if id(t) in graph_outputs or any(id(c) not in ids for c in t.outputs)
    ]
    if inputs is not None:
        outside_in = [find_tensor(graph, t) for t in inputs]
    if outputs is not None:
        outside_out = [find_tensor(graph, t) for t in outputs]
    if not outside_out:
        raise UserError("nothing outside the chosen nodes reads their outputs: cut them instead")
    _check_convex(chosen, ids)
    merged = {**(inherited_attrs(chosen) if inherit else {}), **(attrs or {})}
    return _splice(graph, model, chosen, outside_in, outside_out, op, domain, merged, name)


def inherited_attrs(chosen: list[Any]) -> dict[str, Any]:
    """The chosen nodes' plain attributes (numbers, text, lists of them) under ``<op>_<name>``;
    a second node of one op type gets ``<op>2_<name>``. Tensors and subgraphs stay behind."""
    seen: dict[str, int] = {}
    out: dict[str, Any] = {}
    for node in chosen:
        op = node.op.lower()
        seen[op] = seen.get(op, 0) + 1
        prefix = op if seen[op] == 1 else f"{op}{seen[op]}"
        for key, value in node.attrs.items():
            plain = isinstance(value, int | float | str) or (
                isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value)
            )
            if plain:
                out[f"{prefix}_{key}"] = list(value) if isinstance(value, tuple) else value
    return out


def _check_convex(chosen: list[Any], ids: set[int]) -> None:
    """Refuse a set with a path that leaves it and comes back (one node would make a cycle)."""
    frontier = [c for n in chosen for t in n.outputs for c in t.outputs if id(c) not in ids]
    seen: set[int] = set()
    while frontier:
        node = frontier.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for tensor in node.outputs:
            for consumer in tensor.outputs:
                if id(consumer) in ids:
                    raise UserError(
                        f"the chosen nodes are not one piece: {node.name or node.op} is outside "
                        f"the set but between two of its nodes ({consumer.name}) — include it"
                    )
                frontier.append(consumer)


def _splice(
    graph: Any,
    model: onnx.ModelProto,
    chosen: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    op: str,
    domain: str,
    attrs: dict[str, Any],
    name: str,
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    import onnx_graphsurgeon as gs

    removed = [n.name or n.op for n in chosen]
    for node in chosen:
        node.outputs.clear()
        node.inputs.clear()
    node = gs.Node(
        op=op,
        name=name or f"{op}_{len(graph.nodes)}",
        attrs=attrs,
        inputs=list(inputs),
        outputs=list(outputs),
        domain=domain or None,
    )
    graph.nodes.append(node)
    result = export_graph(graph, model)
    return result, {**count_change(model, result), "removed": removed, "added": node.name}


# -- domains, outputs, dims ------------------------------------------------------------------------
def rename_domain(
    model: onnx.ModelProto,
    old: str,
    new: str,
    op: str = "",
    new_op: str = "",
    attrs: dict[str, Any] | None = None,
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """Nodes of domain ``old`` (and op ``op`` when given) moved to ``new``, renamed to
    ``new_op``, with ``attrs`` set (e.g. TensorRT's ``plugin_version``/``plugin_namespace``)."""
    graph = import_graph(model)
    touched = []
    for node in graph.nodes:
        if (node.domain or "") == old and (not op or node.op == op):
            node.domain = new or None
            node.op = new_op or node.op
            node.attrs.update(attrs or {})
            touched.append(node.name or node.op)
    if not touched:
        raise UserError(f"no node in domain {old!r}" + (f" with op {op!r}" if op else ""))
    result = export_graph(graph, model)
    return result, {**count_change(model, result), "renamed": touched}


def cut_outputs(model: onnx.ModelProto, names: list[str]) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """Graph outputs dropped, and every node that only fed them."""
    graph = import_graph(model)
    present = {t.name for t in graph.outputs}
    unknown = [n for n in names if n not in present]
    if unknown:
        raise UserError(f"not graph outputs: {', '.join(unknown)} (outputs: {', '.join(present)})")
    graph.outputs = [t for t in graph.outputs if t.name not in names]
    if not graph.outputs:
        raise UserError("cutting every output leaves an empty model")
    result = export_graph(graph, model)
    return result, {**count_change(model, result), "cut": names}


def set_dims(
    model: onnx.ModelProto, dims: dict[str, list[int | str]]
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """Graph input shapes set: an int fixes a dim, a name makes it dynamic. Inner shapes are
    inferred again (stale ones would lie to the next tool)."""
    result = _copy(model)
    by_name = {i.name: i for i in result.graph.input}
    for name, shape in dims.items():
        if name not in by_name:
            raise UserError(f"{name!r} is not a graph input (inputs: {', '.join(by_name)})")
        tensor_type = by_name[name].type.tensor_type
        old = len(tensor_type.shape.dim)
        if old and old != len(shape):
            raise UserError(f"{name} has rank {old}; {shape} has {len(shape)} dims")
        tensor_type.shape.ClearField("dim")
        for value in shape:
            dim = tensor_type.shape.dim.add()
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
                if int(value) < 1:
                    raise UserError(f"{name}: a fixed dim must be ≥ 1, not {value}")
                dim.dim_value = int(value)
            else:
                dim.dim_param = str(value)
    del result.graph.value_info[:]
    for output in result.graph.output:  # outputs get re-inferred shapes; keep their types
        output.type.tensor_type.ClearField("shape")
    result = infer_shapes(result)
    return result, {**count_change(model, result), "dims": {k: list(v) for k, v in dims.items()}}


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy
