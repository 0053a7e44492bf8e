"""Moving a model in and out of onnx-graphsurgeon without losing what gs does not carry.

gs writes the newest IR version (which the installed ONNX Runtime may not read, PLATFORM.md) and
only the opset imports it was told about; a custom-domain node added by surgery needs its domain
imported, and a domain no node uses any more should not stay behind. Constants that the
TorchScript exporter writes as ``Constant`` nodes are read here too, so patterns see values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from deploylens.core.errors import UserError

STANDARD = ("", "ai.onnx")


def import_graph(model: onnx.ModelProto) -> Any:
    try:
        import onnx_graphsurgeon as gs
    except ImportError as exc:
        raise UserError(
            f"graph surgery needs onnx-graphsurgeon, which does not import here ({exc})",
            "pip install onnx-graphsurgeon (in DeployLens's 'full' extra), or pick a worker "
            "interpreter that has it in Preferences",
        ) from None

    return gs.import_onnx(model)


def export_graph(
    graph: Any, like: onnx.ModelProto, default_opset: int | None = None
) -> onnx.ModelProto:
    """``graph`` as a model with ``like``'s IR version, producer and metadata, and opset imports
    that name exactly the domains its nodes use (the default domain always)."""
    import onnx_graphsurgeon as gs

    graph.cleanup().toposort()
    model = gs.export_onnx(graph, do_type_check=False)
    model.ir_version = like.ir_version
    model.producer_name, model.producer_version = like.producer_name, like.producer_version
    del model.metadata_props[:]
    model.metadata_props.extend(like.metadata_props)
    fix_opsets(model, like, default_opset)
    result: onnx.ModelProto = model
    return result


def fix_opsets(
    model: onnx.ModelProto, like: onnx.ModelProto, default_opset: int | None = None
) -> None:
    """Opset imports consistent with the nodes: the original versions, ``default_opset`` for the
    standard domain when given, version 1 for a new custom domain, unused custom domains gone."""
    versions = {o.domain: o.version for o in like.opset_import}
    versions[""] = default_opset or versions.get("", versions.get("ai.onnx", 17))
    used = {n.domain for n in _all_nodes(model.graph)} | {""}
    used |= {f.domain for f in model.functions}
    del model.opset_import[:]
    for domain in sorted(used, key=lambda d: (d not in STANDARD, d)):
        if domain == "ai.onnx":
            continue
        model.opset_import.append(onnx.helper.make_opsetid(domain, versions.get(domain, 1)))


def _all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    nodes = list(graph.node)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                nodes += _all_nodes(attribute.g)
            for sub in attribute.graphs:
                nodes += _all_nodes(sub)
    return nodes


def opset_of(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in STANDARD:
            return int(entry.version)
    return 1


def constant_value(tensor: Any) -> np.ndarray | None:
    """The value of a gs tensor that is a constant: an initializer or a ``Constant`` node's
    output (the TorchScript exporter writes scalars that way); None for anything computed."""
    import onnx_graphsurgeon as gs

    if isinstance(tensor, gs.Constant):
        return np.asarray(tensor.values)
    if len(tensor.inputs) == 1 and tensor.inputs[0].op == "Constant":
        value = tensor.inputs[0].attrs.get("value")
        if isinstance(value, gs.Constant):
            return np.asarray(value.values)
        if value is not None:
            return np.asarray(value)
    return None


def only_consumers(tensor: Any, allowed: list[Any]) -> bool:
    """True when ``tensor`` feeds only nodes in ``allowed`` and is no graph output (a pattern
    whose inner tensor is used elsewhere cannot be folded into one node)."""
    ids = {id(n) for n in allowed}
    return all(id(n) in ids for n in tensor.outputs)


def find_node(graph: Any, name: str) -> Any:
    for node in graph.nodes:
        if node.name == name:
            return node
    raise UserError(f"no node named {name!r} in the graph")


def find_tensor(graph: Any, name: str) -> Any:
    tensors = graph.tensors()
    if name not in tensors:
        raise UserError(f"no tensor named {name!r} in the graph")
    return tensors[name]


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Shapes inferred (strict off: a custom op just leaves its outputs unknown)."""
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # a model over 2 GB or an op that crashes inference keeps its old shapes
        return model
