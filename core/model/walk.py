"""The graphs inside a graph: If/Loop/Scan bodies, at any depth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx


def iter_subgraphs(nodes: Any) -> Iterator[onnx.GraphProto]:
    """Every graph nested in node attributes (If/Loop/Scan bodies), depth first."""
    for node in nodes:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from iter_subgraphs(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    yield graph
                    yield from iter_subgraphs(graph.node)
