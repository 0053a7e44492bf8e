"""Timeline ↔ graph: which ONNX nodes an event stands for, and per-node latency for the graph
overlay. An ONNX Runtime node event is named after its node; a TensorRT layer (trtexec
``--exportProfile``, IProfiler, or the NVTX ranges of an engine built with detailed profiling
verbosity) names the nodes it fused ("Conv_0 + Relu_1"); a kernel inherits the layer of the
NVTX range around it."""

from __future__ import annotations

import numpy as np

from deploylens.core.engine.layers import onnx_nodes_from_name
from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.model import KIND, Trace, member
from deploylens.core.trace.trtexec import LAYER_DETAIL

LINKED_KINDS = (KIND["ort_node"], KIND["kernel"], KIND["nvtx"])


def event_nodes(index: TimelineIndex, event: int) -> list[str]:
    """ONNX node names for an event, most specific first: an ORT node's own name, a TensorRT
    layer's fused nodes, then those of the NVTX ranges around it (innermost first). Plain CUDA
    kernels and CPU ops name no node by themselves."""
    trace = index.trace
    found: list[str] = []
    kind = int(trace.kind[event])
    name = trace.names[int(trace.name[event])]
    if kind == KIND["ort_node"]:
        found.append(name)
    elif kind == KIND["nvtx"] or trace.names[int(trace.detail[event])] == LAYER_DETAIL:
        found += onnx_nodes_from_name(name)[0]
    for parent in reversed(index.parents(event)):
        if trace.kind[parent] == KIND["nvtx"]:
            found += onnx_nodes_from_name(trace.names[int(trace.name[parent])])[0]
    return list(dict.fromkeys(n for n in found if n))


def node_latency(trace: Trace) -> dict[str, float]:
    """ONNX node → milliseconds per run, from ORT node events or TensorRT layer events (a fused
    layer's time shared equally among its nodes, as the engine overlay does). Runs = the median
    number of times a name occurs."""
    nodes = trace.kind == KIND["ort_node"]
    layers = (trace.kind == KIND["kernel"]) & (trace.detail == _id(trace, LAYER_DETAIL))
    use = nodes if nodes.any() else layers
    if not use.any():
        return {}
    names, inverse, counts = np.unique(trace.name[use], return_inverse=True, return_counts=True)
    totals = np.bincount(inverse.reshape(-1), weights=trace.dur[use].astype(np.float64))
    runs = max(float(np.median(counts)), 1.0)
    result: dict[str, float] = {}
    for name_id, total in zip(names.tolist(), totals.tolist(), strict=True):
        name = trace.names[name_id]
        parts = [name] if nodes.any() else onnx_nodes_from_name(name)[0]
        for node in parts:
            result[node] = result.get(node, 0.0) + total / 1e6 / runs / len(parts)
    return result


def events_of_node(trace: Trace, node: str) -> np.ndarray:
    """Events standing for ``node``: its ORT node events, or the layers/ranges that fused it."""
    ids = [
        i
        for i, name in enumerate(trace.names)
        if name == node or node in onnx_nodes_from_name(name)[0]
    ]
    hits = np.flatnonzero(
        member(trace.name, ids, len(trace.names)) & member(trace.kind, LINKED_KINDS)
    )
    return hits[np.argsort(trace.start[hits], kind="stable")]


def _id(trace: Trace, text: str) -> int:
    try:
        return trace.names.index(text)
    except ValueError:
        return -1
