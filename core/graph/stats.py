"""``deploylens graph --stats``: size, hierarchy and layout time of a model's graph."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.scene import GraphScene
from deploylens.core.model.loading import read_model


def graph_stats(path: str | Path, expand: int = 0) -> dict[str, Any]:
    started = time.perf_counter()
    model = read_model(path)
    parsed = time.perf_counter()
    ir = build_model_ir(model)
    built = time.perf_counter()
    scene_model = GraphScene(ir)
    if expand:
        scene_model.expand_to_depth(expand)
    scene = scene_model.scene()
    laid_out = time.perf_counter()
    return {
        "model": str(path),
        "nodes": ir.op_count,
        "weight_nodes_folded": len(ir.folded),  # Identity/Constant shown inside their consumer
        "pseudo_nodes": ir.node_count - ir.op_count,
        "edges": len(ir.edge_src),
        "hierarchy": ir.hierarchy,
        "groups": ir.groups.count - 1,
        "depth": ir.groups.max_depth,
        "subgraph_nodes": len(ir.subgraphs),
        "functions": len(ir.functions),
        "expanded_to_depth": expand,
        "visible_boxes": len(scene.box_kind),
        "visible_edges": len(scene.edge_src_box),
        "parse_s": round(parsed - started, 4),
        "ir_s": round(built - parsed, 4),
        "layout_s": round(laid_out - built, 4),
        "scene_size": [round(scene.width), round(scene.height)],
    }


def stats_text(stats: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"Model        {stats['model']}",
            f"Nodes        {stats['nodes']:,} ops, {stats['edges']:,} edges "
            f"(+{stats['pseudo_nodes']} graph inputs/outputs)",
            f"Hierarchy    {stats['hierarchy']}: {stats['groups']:,} groups, depth "
            f"{stats['depth']}",
            f"Subgraphs    {stats['subgraph_nodes']} nodes with subgraphs, "
            f"{stats['functions']} local functions",
            f"View         expanded to depth {stats['expanded_to_depth']}: "
            f"{stats['visible_boxes']:,} boxes, {stats['visible_edges']:,} edges, "
            f"{stats['scene_size'][0]:,}×{stats['scene_size'][1]:,} px",
            f"Time         parse {stats['parse_s']:.3f} s, IR {stats['ir_s']:.3f} s, "
            f"layout {stats['layout_s']:.3f} s",
        ]
    )
