"""Every model in ../shared/artifacts builds a graph IR and a laid-out scene, subgraphs and
local functions included, or is refused in one sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from deploylens.core.errors import ModelLoadError
from deploylens.core.graph.ir import GraphIR, build_ir, build_model_ir
from deploylens.core.graph.scene import GraphScene
from deploylens.core.model.loading import read_model


def walk(ir: GraphIR, depth: int = 0) -> int:
    """Lay out ``ir`` fully expanded, then every subgraph and function inside; count graphs."""
    scene_model = GraphScene(ir)
    scene_model.expand_to_depth(8)
    scene = scene_model.scene()
    assert np.all(scene.node_box >= 0)
    assert np.isfinite(scene.box_rect).all()
    graphs = 1
    for node, entries in ir.subgraphs.items():
        for name, graph in entries:
            graphs += walk(build_ir(graph, ir.functions, title=name), depth + 1)
        del node
    for function in ir.functions.values() if depth == 0 else ():
        graphs += walk(build_ir(function, ir.functions, title=function.name), depth + 1)
    return graphs


def test_every_artifact_model_opens_in_the_graph(artifacts: Path) -> None:
    models = sorted(artifacts.rglob("*.onnx"))
    assert len(models) > 1800
    opened = refused = graphs = 0
    ops_in_subgraphs: set[str] = set()
    for path in models:
        try:
            model = read_model(path)
        except ModelLoadError as exc:
            assert exc.message.endswith(".")
            refused += 1
            continue
        ir = build_model_ir(model)
        graphs += walk(ir)
        opened += 1
        if ir.subgraphs:
            ops_in_subgraphs.update(ir.op_type(n) for n in ir.subgraphs)
    assert opened == len(models) - refused
    assert {"If", "Loop", "Scan"} <= ops_in_subgraphs
    assert graphs > opened  # subgraphs and functions were entered too


def test_custom_domain_ops_are_nodes(artifacts: Path) -> None:
    models = sorted((artifacts / "microsoft-onnxruntime-extensions").rglob("*.onnx"))
    domains: set[str] = set()
    for path in models:
        ir = build_model_ir(onnx.load(path, load_external_data=False))
        domains.update(ir.strings[int(d)] for d in ir.domain)
    assert "ai.onnx.contrib" in domains
