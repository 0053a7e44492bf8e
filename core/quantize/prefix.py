"""Evaluate only what a variant changes.

A one-node variant differs from its base model (FP32 for "only this node in INT8", the full Q/DQ
model for "everything but this node") from that node on; everything upstream computes the same
values. So the base runs once keeping the tensors at those frontiers, and each variant runs only
the changed node, its descendants and whatever Q/DQ it added, fed from the kept tensors. On
resnet18 that halves an evaluation on average (bench/sensitivity.py).

Where the cut is made matters for honesty. ONNX Runtime fuses DQ → Conv → Q into integer kernels;
asking for a float tensor inside such a pattern would stop the fusion in the caching run and give
slightly different values from the whole model. So in a Q/DQ base the cut is only ever made at
QuantizeLinear outputs (int8: the fused kernels' own outputs) or graph inputs, and the part run
holds every pattern whole — its scores are the whole variant's (tests/core/test_sensitivity.py
compares them). The greedy curve and the plan are still scored on whole models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import onnx

CACHE_LIMIT_BYTES = 1 << 30  # past this, whole-model evaluation (memory over speed)


def descendants(model: onnx.ModelProto, names: Iterable[str]) -> list[onnx.NodeProto]:
    """The named nodes and every node downstream of them, in graph order."""
    chosen = set(names)
    reached: set[str] = set()
    picked = []
    for node in model.graph.node:  # graph order is topological (ONNX requires it)
        if node.name in chosen or any(i in reached for i in node.input if i):
            picked.append(node)
            reached.update(node.output)
    return picked


def frontier(model: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> set[str]:
    """Tensors ``nodes`` read that they do not make (initializers excepted)."""
    made = {o for n in nodes for o in n.output}
    weights = {t.name for t in model.graph.initializer}
    return {i for n in nodes for i in n.input if i and i not in made and i not in weights}


def region(
    model: onnx.ModelProto, changed: Iterable[str], clean: Callable[[str, str], bool]
) -> list[onnx.NodeProto] | None:
    """``changed``, its descendants, and producers pulled in until every tensor the region reads
    from outside is ``clean(tensor, producer op)``; None if that cannot be reached."""
    nodes = descendants(model, changed)
    producer = {o: n for n in model.graph.node for o in n.output}
    picked = {id(n) for n in nodes}
    while True:
        outside = [t for t in frontier(model, nodes) if not clean(t, _op(producer.get(t)))]
        if not outside:
            return nodes
        for tensor in outside:
            node = producer.get(tensor)
            if node is None:
                return None
            picked.add(id(node))
        nodes = [n for n in model.graph.node if id(n) in picked]


def _op(node: onnx.NodeProto | None) -> str:
    return node.op_type if node is not None else ""


class PrefixCache:
    """A base model's tensors at the frontiers of the variants to come, per evaluation feed.
    ``quantized``: the base is a Q/DQ model, cut only at QuantizeLinear outputs."""

    def __init__(self, model: onnx.ModelProto, quantized: bool) -> None:
        self.model = model
        self.quantized = quantized
        self.inputs = {i.name for i in model.graph.input}
        self.made = {o for n in model.graph.node for o in n.output}
        self.wanted: set[str] = set()
        self.values: list[dict[str, np.ndarray]] | None = None
        self.available: set[str] = set()

    def clean(self, tensor: str, op: str) -> bool:
        if tensor in self.inputs:
            return True
        if tensor not in self.made:  # a variant's own Q/DQ: run it
            return False
        return op == "QuantizeLinear" if self.quantized else True

    def plan(self, variant: onnx.ModelProto, changed: Iterable[str]) -> None:
        """Note the tensors ``variant`` will want (call for each variant before ``fill``)."""
        nodes = region(variant, changed, self.clean)
        if nodes is not None:
            self.wanted |= frontier(variant, nodes)

    def fill(self, feeds: list[dict[str, Any]], options: Any,
             limit: int = CACHE_LIMIT_BYTES) -> None:  # fmt: skip
        """Run the base once over ``feeds``, keeping the planned tensors."""
        import onnxruntime as ort

        model = self.model
        wanted = sorted((self.wanted - self.inputs) & self.made)
        first = model.graph.output[0].name
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        del probe.graph.output[:]
        probe.graph.output.extend(
            [model.graph.output[0], *(onnx.ValueInfoProto(name=n) for n in wanted if n != first)]
        )
        session = ort.InferenceSession(
            probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        names = [o.name for o in session.get_outputs()]
        self.values = []
        size = 0
        for feed in feeds:
            row = dict(zip(names, session.run(None, feed), strict=True))
            row.update(feed)
            size += sum(a.nbytes for a in row.values())
            if size > limit:
                self.values = None  # too big to keep: whole-model evaluation instead
                break
            self.values.append(row)
        self.available = (set(wanted) | self.inputs) if self.values is not None else set()

    def submodel(self, variant: onnx.ModelProto, changed: Iterable[str]) -> onnx.ModelProto | None:
        """The part of ``variant`` that ``changed`` can affect, its inputs the kept tensors; None
        when the cache cannot feed it (then evaluate the whole variant)."""
        if self.values is None:
            return None
        nodes = region(variant, changed, self.clean)
        if nodes is None or not frontier(variant, nodes) <= self.available:
            return None
        output = variant.graph.output[0]
        if output.name not in {o for n in nodes for o in n.output}:
            return None  # the output does not depend on the change: same as the base
        sample = self.values[0]
        inputs = [
            onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(sample[name].dtype), sample[name].shape
            )
            for name in sorted(frontier(variant, nodes))
        ]
        used = {i for n in nodes for i in n.input}
        graph = onnx.helper.make_graph(
            nodes, "changed", inputs, [output],
            [t for t in variant.graph.initializer if t.name in used],
        )  # fmt: skip
        sub = onnx.helper.make_model(graph, opset_imports=variant.opset_import)
        sub.ir_version = variant.ir_version
        return sub

    def feeds(self, sub: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
        assert self.values is not None
        names = [i.name for i in sub.graph.input]
        return [{n: row[n] for n in names} for row in self.values]
