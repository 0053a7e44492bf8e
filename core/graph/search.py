"""Search a graph by node name, op type or tensor name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deploylens.core.graph.ir import GraphIR


@dataclass(frozen=True)
class SearchHit:
    node: int
    field: str  # "name" | "op" | "tensor"
    text: str


def search(ir: GraphIR, query: str, limit: int = 500) -> list[SearchHit]:
    """Case-insensitive substring matches, node names first, then op types, then tensors."""
    needle = query.strip().lower()
    if not needle:
        return []
    matching = np.array([needle in s.lower() for s in ir.strings.values], dtype=bool)
    hits: list[SearchHit] = []
    seen: set[tuple[int, str]] = set()

    def add(nodes: np.ndarray, field: str, ids: np.ndarray) -> None:
        for node, string_id in zip(nodes.tolist(), ids.tolist(), strict=True):
            if len(hits) >= limit or (node, field) in seen:
                continue
            seen.add((node, field))
            hits.append(SearchHit(node, field, ir.strings[string_id]))

    by_name = np.flatnonzero(matching[ir.name])
    add(by_name, "name", ir.name[by_name])
    by_op = np.flatnonzero(matching[ir.op])
    add(by_op, "op", ir.op[by_op])
    by_tensor = np.flatnonzero(matching[ir.edge_tensor])
    add(ir.edge_src[by_tensor], "tensor", ir.edge_tensor[by_tensor])
    return hits
