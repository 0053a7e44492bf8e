"""Colours and per-box fills of the graph view (overlay-aware, vectorized)."""

from __future__ import annotations

import numpy as np

from deploylens.core.graph.ir import OP
from deploylens.core.graph.overlay import Overlay
from deploylens.core.graph.scene import BOX_GROUP, BOX_NODE, GraphScene, Scene

BACKGROUND = "#fbfbfc"
FRAME_FILL = (244, 247, 251)
FRAME_BORDER = "#9fb3c8"
GROUP_FILL = (214, 228, 245)
PSEUDO_FILL = (225, 225, 225)
EDGE = "#7b8794"
SELECTED = "#ff7f0e"
HIGHLIGHT = "#d62728"
TEXT = "#1f2933"


def box_fills(model: GraphScene, scene: Scene, overlay: Overlay | None) -> np.ndarray:
    """(B, 3) uint8 fill of every box: overlay colour, aggregated for collapsed groups."""
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
    fills[nodes] = overlay.node_colors()[scene.box_ref[nodes]]
    fills[pseudo] = PSEUDO_FILL
    if groups.any():
        values = group_values(model, scene, overlay)[groups]
        scale = None
        if overlay.aggregate == "sum" and np.isfinite(values).any():
            scale = (float(np.nanmin(values)), float(np.nanmax(values)))
        fills[groups] = overlay.colors_for(values, scale)
    return fills


def group_values(model: GraphScene, scene: Scene, overlay: Overlay) -> np.ndarray:
    """The overlay's aggregate for every box, over the nodes each box stands for (core's one
    aggregation, ``Overlay.aggregate_by``)."""
    return overlay.aggregate_by(scene.node_box, len(scene.box_kind))
