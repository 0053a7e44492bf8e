"""Headless graph rendering for ``deploylens graph --png`` (entry point ``graph_png``)."""

from __future__ import annotations

from pathlib import Path

from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.overlay import load_overlay_json, op_type_overlay
from deploylens.core.graph.scene import GraphScene
from deploylens.core.model.loading import read_model
from deploylens.gui.common.qt_app import application, ensure_platform


def render_graph_png(
    model_path: str | Path, png: str | Path, expand: int = 0, overlay_json: str | None = None
) -> dict[str, object]:
    ensure_platform()
    application()
    from deploylens.gui.graph.canvas import GraphCanvas
    from deploylens.gui.graph.export import export_png

    scene_model = GraphScene(build_model_ir(read_model(model_path)))
    if expand:
        scene_model.expand_to_depth(expand)
    canvas = GraphCanvas()
    canvas.resize(1600, 1000)
    canvas.set_model(scene_model)
    unmatched: list[str] = []
    if overlay_json:
        overlay, unmatched = load_overlay_json(overlay_json, scene_model.ir)
    else:
        overlay = op_type_overlay(scene_model.ir)
    canvas.set_overlay(overlay)
    path = export_png(canvas, png)
    return {"png": str(path), "boxes": len(canvas.scene.box_kind), "unmatched": unmatched}
