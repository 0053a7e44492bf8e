"""The graphs inside a graph: If/Loop/Scan bodies, at any depth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx


def iter_subgraphs(nodes: Any) -> Iterator[onnx.GraphProto]:
    """Every graph nested in node attributes (If/Loop/Scan bodies), depth first."""
    for node in nodes:
        # a slice, not the repeated field: iterating it ends in an IndexError that upb formats,
        # once per node (most have no attribute at all)
        for attribute in node.attribute[:]:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from iter_subgraphs(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    yield graph
                    yield from iter_subgraphs(graph.node)
