"""The graphs inside a graph: If/Loop/Scan bodies, at any depth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx


def iter_subgraphs(nodes: Any) -> Iterator[onnx.GraphProto]:
    """Every graph nested in node attributes (If/Loop/Scan bodies), depth first."""
    for node in nodes:
        attributes = node.attribute
        if not attributes:  # most nodes have none: a length, not an empty list made (~40 % less)
            continue
        # a slice, not the repeated field: iterating it ends in an IndexError that upb formats
        for attribute in attributes[:]:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from iter_subgraphs(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    yield graph
                    yield from iter_subgraphs(graph.node)
