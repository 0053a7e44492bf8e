"""Names ONNX Runtime's graph optimizer gives the nodes it rewrites, traced back to the nodes of
the model the user opened — so an optimized profile still links to the graph.

Measured on ORT 1.31 (CPU), per optimization level:
- basic: node names unchanged;
- extended: a Conv + activation becomes ``FusedConv`` under the Conv's name; the activation's
  own node disappears;
- all: NCHWc kernels are named ``<output tensor>_nchwc`` after the last node they fused (a Relu's
  output for Conv + Relu, a MaxPool's for a pool), and layout changes appear as ``ReorderInput``
  / ``ReorderOutput``, which stand for no node of the model."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx

from deploylens.core.trace.model import KIND, Trace

SUFFIXES = ("_nchwc",)
LAYOUT_ONLY = frozenset({"ReorderInput", "ReorderOutput"})
# activations ORT folds into the producer's kernel (FusedConv, FusedGemm, NCHWc Conv)
FOLDED = frozenset({"Relu", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Add", "Sum"})
MAX_CHAIN = 4


def ort_aliases(trace: Trace, graph: onnx.GraphProto) -> dict[str, list[str]]:
    """ORT node event name → the model's nodes it ran, for every event name that is not a node
    of ``graph`` as it stands (an empty list: ORT bookkeeping with no model node)."""
    nodes = {n.name: n for n in graph.node}
    producer = {out: n for n in graph.node for out in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    events = trace.kind == KIND["ort_node"]
    timed = {trace.names[int(i)] for i in np.unique(trace.name[events])}
    aliases: dict[str, list[str]] = {}
    for name in sorted(timed):
        op = _op_of(trace, name)
        if name in nodes:
            if op.startswith("Fused"):  # the activation it absorbed has no event of its own
                folded = _folded_consumer(nodes[name], consumers, timed)
                if folded:
                    aliases[name] = [name, folded]
            continue
        if name in LAYOUT_ONLY:
            aliases[name] = []
            continue
        aliases[name] = _from_output(name, op, producer)
    return aliases


def remap_latency(
    latency: Mapping[str, float], aliases: Mapping[str, list[str]]
) -> dict[str, float]:
    """Per-node times with optimized names spread over the model nodes they ran (equal shares,
    as for a TensorRT layer); layout-only kernels are dropped."""
    result: dict[str, float] = {}
    for name, ms in latency.items():
        targets = aliases.get(name, [name])
        for node in targets:
            result[node] = result.get(node, 0.0) + ms / len(targets)
    return result


def alias_of(node: str, aliases: Mapping[str, list[str]]) -> list[str]:
    """Event names that ran ``node`` under another name."""
    return [event for event, nodes in aliases.items() if node in nodes and event != node]


def _op_of(trace: Trace, name: str) -> str:
    """The op ORT ran for an event name (the importer keeps it as "<op> on <provider>")."""
    name_id = trace.names.index(name)
    hits = np.flatnonzero((trace.name == name_id) & (trace.kind == KIND["ort_node"]))
    detail = trace.names[int(trace.detail[hits[0]])] if hits.size else ""
    return detail.split(" on ")[0]


def _folded_consumer(
    node: onnx.NodeProto, consumers: Mapping[str, list[onnx.NodeProto]], timed: set[str]
) -> str | None:
    users = consumers.get(node.output[0], []) if node.output else []
    if len(users) == 1 and users[0].op_type in FOLDED and users[0].name not in timed:
        return users[0].name
    return None


def _from_output(name: str, op: str, producer: Mapping[str, onnx.NodeProto]) -> list[str]:
    """``<tensor>_nchwc`` → the node making that tensor, and up its first inputs to the node of
    the op ORT ran (Relu → Conv for a fused Conv + Relu)."""
    tensor = next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), name)
    node = producer.get(tensor)
    if node is None:
        return []
    chain = [node]
    while node.op_type != op and len(chain) < MAX_CHAIN and node.op_type in FOLDED:
        node = producer.get(node.input[0]) if node.input else None
        if node is None:
            return [chain[0].name]
        chain.insert(0, node)
    if chain[0].op_type != op:
        return [chain[-1].name]  # the op did not match: name only the tensor's own producer
    return [n.name for n in chain]
