"""What a surgery changed, node by node: added, removed and changed nodes (same name, another
op, wiring or attributes) — the Graph panel paints the first and last, the panel lists all."""

from __future__ import annotations

from typing import Any

import onnx

from deploylens.core.surgery.result import GraphDiff


def _key(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}#{','.join(node.output) or index}"


def _signature(node: onnx.NodeProto) -> tuple[Any, ...]:
    attrs = tuple(sorted((a.name, a.SerializeToString()) for a in node.attribute))
    return (node.domain, node.op_type, tuple(node.input), tuple(node.output), attrs)


def graph_diff(before: onnx.ModelProto, after: onnx.ModelProto) -> GraphDiff:
    old = {_key(n, i): _signature(n) for i, n in enumerate(before.graph.node)}
    new = {_key(n, i): _signature(n) for i, n in enumerate(after.graph.node)}
    return GraphDiff(
        added=[k for k in new if k not in old],
        removed=[k for k in old if k not in new],
        changed=[k for k in new if k in old and new[k] != old[k]],
    )


def boundary(graph: onnx.GraphProto, nodes: list[str]) -> tuple[list[str], list[str]]:
    """(tensors the named nodes read from outside, not initializers; tensors they make that
    something outside reads or that are graph outputs) — an extraction's inputs and outputs."""
    chosen = [n for n in graph.node if n.name in set(nodes)]
    made = {t for n in chosen for t in n.output}
    constants = {i.name for i in graph.initializer} | {
        o for n in graph.node if n.op_type == "Constant" for o in n.output
    }
    inputs: list[str] = []
    for node in chosen:
        for tensor in node.input:
            if tensor and tensor not in made and tensor not in constants and tensor not in inputs:
                inputs.append(tensor)
    ids = {id(n) for n in chosen}
    read_outside = {t for n in graph.node if id(n) not in ids for t in n.input}
    graph_outputs = {o.name for o in graph.output}
    outputs = [t for n in chosen for t in n.output if t in read_outside or t in graph_outputs]
    return inputs, outputs
