"""Colours and per-box fills of the graph view (overlay-aware, vectorized)."""

from __future__ import annotations

import numpy as np

from deploylens.core.graph.ir import OP
from deploylens.core.graph.overlay import Overlay
from deploylens.core.graph.scene import BOX_GROUP, BOX_NODE, GraphScene, Scene

BACKGROUND = "#fbfbfc"
FRAME_FILL = (244, 247, 251)
FRAME_HEADER = (221, 231, 243)
FRAME_BORDER = "#7d97b5"
GROUP_FILL = (232, 238, 246)
GROUP_BORDER = "#4f6d8f"
GROUP_SHADOW = "#c3cfdd"
PSEUDO_FILL = (225, 225, 225)
EDGE = "#7b8794"
EDGE_TEXT = "#52606d"
# Selection: magenta with a white halo — far from every op category colour and from viridis
# (tests/gui/test_graph_canvas.py measures the distance), so it shows on Conv's orange too.
SELECTED = "#e000e0"
SELECTED_HALO = "#ffffff"
HIGHLIGHT = "#d62728"
TEXT = "#1f2933"


def box_fills(
    model: GraphScene,
    scene: Scene,
    overlay: Overlay | None,
    scale: tuple[float, float] | None = None,
) -> np.ndarray:
    """(B, 3) uint8 fill of every box: overlay colour, aggregated for collapsed groups, on
    ``scale`` (default: ``overlay_scale``, the one the legend shows)."""
    count = len(scene.box_kind)
    fills = np.tile(np.array(FRAME_FILL, dtype=np.uint8), (count, 1))
    nodes = scene.box_kind == BOX_NODE
    groups = scene.box_kind == BOX_GROUP
    fills[groups] = GROUP_FILL
    ir = model.ir
    pseudo = nodes.copy()
    pseudo[nodes] = ir.kind[scene.box_ref[nodes]] != OP
    if overlay is None:
        fills[nodes] = (255, 255, 255)
        fills[pseudo] = PSEUDO_FILL
        return fills
    scale = scale or overlay_scale(model, scene, overlay)
    fills[nodes] = overlay.colors_for(overlay.values, scale)[scene.box_ref[nodes]]
    fills[pseudo] = PSEUDO_FILL
    if groups.any() and not overlay.categorical:  # categories: a composition strip instead
        fills[groups] = overlay.colors_for(group_values(model, scene, overlay)[groups], scale)
    return fills


def overlay_scale(
    model: GraphScene, scene: Scene, overlay: Overlay | None
) -> tuple[float, float] | None:
    """The one numeric scale of everything in view — the nodes' values and the collapsed groups'
    aggregates together — that the fills and the legend share (groups had a scale of their own:
    MobileNetV2's features block, 95 % of the time, was painted the cheapest colour while a
    0.016 ms Gemm was the hottest); None for categories."""
    if overlay is None or overlay.categorical:
        return None
    nodes = scene.box_kind == BOX_NODE
    nodes[nodes] = model.ir.kind[scene.box_ref[nodes]] == OP  # inputs/outputs wear no colour
    groups = scene.box_kind == BOX_GROUP
    shown = [overlay.values[scene.box_ref[nodes]]]
    if groups.any():
        shown.append(group_values(model, scene, overlay)[groups])
    values = np.concatenate(shown)
    finite = values[np.isfinite(values)]
    if not finite.size:
        return None
    return overlay.with_limit(float(finite.min()), float(finite.max()))


def group_values(model: GraphScene, scene: Scene, overlay: Overlay) -> np.ndarray:
    """The overlay's aggregate for every box, over the nodes each box stands for (core's one
    aggregation, ``Overlay.aggregate_by``)."""
    return overlay.aggregate_by(scene.node_box, len(scene.box_kind))


def composition(
    model: GraphScene, scene: Scene, overlay: Overlay | None, limit: int = 4
) -> dict[int, list[tuple[float, tuple[int, int, int]]]]:
    """For each collapsed group box under a categorical overlay: its most common categories as
    (fraction, colour), drawn as a strip — a group is not painted as if it were one Conv."""
    if overlay is None or not overlay.categorical:
        return {}
    groups = np.flatnonzero(scene.box_kind == BOX_GROUP)
    if not groups.size:
        return {}
    owner = scene.node_box
    inside = np.isin(owner, groups) & (overlay.values >= 0)
    if not inside.any():
        return {}
    boxes = owner[inside].astype(np.int64)
    cats = overlay.values[inside].astype(np.int64)
    width = int(cats.max()) + 1
    table = np.bincount(boxes * width + cats, minlength=(int(boxes.max()) + 1) * width)
    table = table.reshape(-1, width)
    colours = overlay.colors_for(np.arange(width, dtype=float))
    result: dict[int, list[tuple[float, tuple[int, int, int]]]] = {}
    for box in np.unique(boxes).tolist():
        row = table[box]
        total = row.sum()
        top = np.argsort(-row, kind="stable")[:limit]
        parts = [(float(row[c] / total), tuple(int(v) for v in colours[c])) for c in top if row[c]]
        rest = 1.0 - sum(f for f, _ in parts)
        if rest > 1e-9:
            parts.append((rest, (180, 180, 180)))
        result[box] = parts  # type: ignore[assignment]
    return result
