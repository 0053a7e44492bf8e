"""The Graph panel with real widgets: open, expand, select, search, highlight, overlays,
subgraphs, export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QImage

from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.scene import BOX_FRAME, BOX_GROUP, BOX_NODE, GraphScene
from deploylens.gui.graph.canvas import GraphCanvas
from deploylens.gui.graph.export import export_png, export_svg
from tests.gui.conftest import JOB_TIMEOUT_MS
from tests.gui.test_demo import distinct_colours
from tests.helpers.onnx_models import if_model


def open_graph(qtbot, make_window, path: Path):
    window = make_window()
    window.resize(1500, 950)
    panel = window.graph_panel
    with qtbot.waitSignal(panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        window.open_path(path)
    window.docks["Graph"].raise_()
    qtbot.wait(50)
    return window, panel


def box_center(canvas: GraphCanvas, box: int) -> QPoint:
    x0, y0, x1, y1 = canvas.scene.box_rect[box]
    point = canvas.transform().map(QPointF((x0 + x1) / 2, (y0 + y1) / 2))
    return QPoint(int(point.x()), int(point.y()))


def test_open_expand_select_properties(qtbot, make_window, samples: Path) -> None:
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    canvas = panel.canvas
    assert len(canvas.scene.box_kind) == 6  # image, stem, stage1, stage2, head, output
    stage1 = next(
        b
        for b in range(6)
        if canvas.scene.box_kind[b] == BOX_GROUP
        and panel.model.ir.groups.name[canvas.scene.box_ref[b]] == "stage1"
    )
    qtbot.mouseDClick(canvas, Qt.MouseButton.LeftButton, pos=box_center(canvas, stage1))
    assert len(canvas.scene.box_kind) > 6
    assert BOX_FRAME in canvas.scene.box_kind.tolist()
    conv = next(
        b
        for b in range(len(canvas.scene.box_kind))
        if canvas.scene.box_kind[b] == BOX_NODE
        and panel.model.ir.op_type(int(canvas.scene.box_ref[b])) == "MaxPool"
    )
    canvas.fit()
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=box_center(canvas, conv))
    text = panel.properties.text()
    assert "op | MaxPool" in text and "hierarchy | stage1" in text
    assert "kernel_shape | [2, 2]" in text
    assert "Inputs" in text and "Outputs" in text


def test_search_reveals_and_shows_shapes(qtbot, make_window, samples: Path) -> None:
    window, panel = open_graph(qtbot, make_window, samples / "small_cnn.dynamo.onnx")
    qtbot.waitUntil(
        lambda: any(j.method == "graph.shapes" and j.state == "done" for j in window.jobs.jobs),
        timeout=JOB_TIMEOUT_MS,
    )
    panel.search_box.setText("gemm")
    panel.run_search()
    assert panel.results.count() >= 1
    item = panel.results.item(0)
    panel.results.itemClicked.emit(item)
    node = int(item.data(Qt.ItemDataRole.UserRole))
    scene = panel.canvas.scene
    assert scene.box_kind[scene.node_box[node]] == BOX_NODE  # its groups were expanded
    assert panel.canvas.selected == (BOX_NODE, node)
    text = panel.properties.text()
    assert "op | Gemm" in text
    assert "float32 [1, 10]" in text  # output shape from the worker's shape inference
    assert "initializer" in text


def test_initializer_statistics_from_the_worker(qtbot, make_window, samples: Path) -> None:
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.dynamo.onnx")
    node = next(i for i in range(panel.model.ir.node_count) if panel.model.ir.op_type(i) == "Gemm")
    panel.reveal(node)
    assert panel.properties.stats_button.isEnabled()
    panel.properties.stats_button.click()
    qtbot.waitUntil(lambda: "mean" in panel.properties.text(), timeout=JOB_TIMEOUT_MS)
    assert "std" in panel.properties.text()


def test_highlight_and_context_menu(qtbot, make_window, samples: Path) -> None:
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    ir = panel.model.ir
    relu = next(i for i in range(ir.node_count) if ir.op_type(i) == "Relu")
    panel.highlight(relu, downstream=True)
    assert panel.canvas.highlight.sum() == len(ir.reachable(relu, True))
    menu = panel.context_menu(BOX_NODE, relu)
    labels = [a.text() for a in menu.actions()]
    assert "Highlight upstream" in labels and "Export SVG…" in labels
    group_menu = panel.context_menu(BOX_GROUP, 1)
    assert group_menu.actions()[0].text() == "Expand"


def test_overlays_from_api_and_file(qtbot, make_window, samples: Path, tmp_path: Path) -> None:
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    assert panel.overlay_box.currentText() == "op type"
    assert any("Conv (3)" in label for label, _ in panel.legend.entries)
    unmatched = panel.overlay("error", {"/stem/stem.0/Conv": 1e-3, "nobody": 1.0})
    assert unmatched == ["nobody"] and panel.overlay_box.currentText() == "error"
    path = tmp_path / "latency.json"
    path.write_text(json.dumps({"/head/head.2/Gemm": 0.7, "/stem/stem.0/Conv": 0.1}))
    panel.load_overlay_file(str(path))
    assert panel.overlay_box.currentText() == "latency"
    panel.overlay_box.setCurrentText("node count per group")
    fills = panel.canvas.fills[panel.canvas.scene.box_kind == BOX_GROUP]
    assert len({tuple(f) for f in fills.tolist()}) > 1  # groups of 2 and 3 nodes differ


def test_enter_subgraph_and_breadcrumbs(qtbot, make_window, tmp_path: Path) -> None:
    path = tmp_path / "if.onnx"
    onnx.save(if_model(), str(path))
    _window, panel = open_graph(qtbot, make_window, path)
    ir = panel.model.ir
    node = next(i for i in range(ir.node_count) if ir.op_type(i) == "If")
    assert sorted(panel.enterable(node)) == ["else_branch", "then_branch"]
    panel.enter(node, "else_branch")
    assert panel.breadcrumb_titles()[-1].endswith("else_branch")
    inner_if = next(
        i for i in range(panel.model.ir.node_count) if panel.model.ir.op_type(i) == "If"
    )
    panel._on_activated(BOX_NODE, inner_if)  # double-click enters the first subgraph
    assert len(panel.breadcrumb_titles()) == 3
    panel.go_to_level(0)
    assert len(panel.breadcrumb_titles()) == 1 and panel.model.ir is ir


def test_export_png_and_svg(qtbot, make_window, samples: Path, tmp_path: Path) -> None:
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    panel.expand_to_depth(4)
    png = export_png(panel.canvas, tmp_path / "g.png")
    image = QImage(str(png))
    assert image.height() > image.width() > 100
    assert distinct_colours(image, step=3) > 10
    svg = export_svg(panel.canvas, tmp_path / "g.svg").read_text()
    assert svg.startswith("<?xml") and "Conv" in svg and "MaxPool" in svg


def test_pan_zoom_keys_and_lod(qtbot, samples: Path) -> None:
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(800, 600)
    model = GraphScene(build_model_ir(onnx.load(samples / "small_cnn.torchscript.onnx")))
    model.expand_to_depth(5)
    canvas.set_model(model)
    canvas.show()
    scale = canvas.scale
    qtbot.keyClick(canvas, Qt.Key.Key_Plus)
    assert canvas.scale > scale
    center = canvas.center
    qtbot.keyClick(canvas, Qt.Key.Key_Left)
    assert canvas.center.x() < center.x()
    canvas.scale = 0.05
    canvas.grab()
    assert canvas.last_paint_stats["labels"] == 0  # boxes only when far
    assert canvas.last_paint_stats["raster"] > 0  # sub-pixel boxes rasterized in one image
    canvas.scale = 2.0
    canvas.center_on_box(int(canvas.scene.node_box[3]))
    canvas.grab()
    assert canvas.last_paint_stats["labels"] > 0
    assert canvas.last_paint_stats["boxes"] < len(canvas.scene.box_kind)  # culled


def test_every_artifact_model_paints(qtbot, artifacts: Path) -> None:
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(640, 480)
    from deploylens.core.errors import ModelLoadError
    from deploylens.core.graph.overlay import op_type_overlay
    from deploylens.core.model.loading import read_model

    painted = 0
    for path in sorted(artifacts.rglob("*.onnx")):
        try:
            ir = build_model_ir(read_model(path))
        except ModelLoadError:
            continue
        model = GraphScene(ir)
        model.expand_to_depth(3)
        canvas.set_model(model)
        canvas.set_overlay(op_type_overlay(ir))
        canvas.grab()
        assert canvas.last_paint_stats["boxes"] >= 1
        painted += 1
    assert painted > 1800
    assert np.isfinite(canvas.scale)


def test_overlay_asked_for_before_the_parse_waits_for_it(qtbot, make_window, samples: Path) -> None:
    """A validation that ended before the document's parse reached the graph raised "Open a
    model before adding an overlay" in the event loop: it now waits and is painted."""
    window = make_window()
    panel = window.graph_panel
    path = str((samples / "small_cnn.dynamo.onnx").resolve())
    proto = onnx.load(path)
    panel.expect(path)  # what the window does when the worker's summary arrives
    node = proto.graph.node[0].name
    assert panel.overlay("early", {node: 1.0}) == []
    with qtbot.waitSignal(panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        panel.load(path, proto)
    assert panel.overlay_box.currentText() == "early"
    assert panel.overlays["early"].name == "early"


def test_a_graph_laid_out_ahead_is_shown_before_the_summary_and_kept(
    qtbot, make_window, samples: Path, monkeypatch
) -> None:
    """The document's parse, done before the worker's summary, is laid out and shown at once
    (``prepare``); the summary (``expect``) keeps it, ``load`` of that same parse lays out
    nothing, a load of another parse lays out its own, and a failed open takes it away."""
    from deploylens.gui.graph import panel as panel_module

    calls: list[str] = []
    original = panel_module.load_graph

    def counted(path, proto=None):
        calls.append(path)
        return original(path, proto)

    monkeypatch.setattr(panel_module, "load_graph", counted)
    panel = make_window().graph_panel
    path = str((samples / "small_cnn.dynamo.onnx").resolve())
    proto = onnx.load(path)
    with qtbot.waitSignal(panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        panel.prepare(path, proto)
    panel.expect(path)  # the summary arrives after the graph
    assert panel.pages.currentIndex() == 1 and panel.loaded_path == path
    panel.load(path, proto)  # the document's sig_parsed, after the summary
    assert calls == [path] and panel.model is not None
    with qtbot.waitSignal(panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        panel.load(path, onnx.load(path))  # another parse: laid out again
    assert calls == [path, path]
    panel.forget(path, "the worker died")
    assert panel.pages.currentWidget() is panel.empty and panel.model is None
    assert "could not be opened" in panel.empty.text() and "the worker died" in panel.empty.text()


def test_opening_another_model_stops_the_last_ones_shapes_job(
    qtbot, make_window, samples: Path
) -> None:
    """The shapes of a model no longer shown (seconds of shape inference on a large one) took a
    core from the next open: the 100k-node model opened in 1.3, 1.9, then 2.8 s in a row. A
    real worker that sleeps stands in for a long shapes job here."""
    from deploylens.gui.worker_client import WorkerJob

    window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    sleeper: WorkerJob[object] = WorkerJob("selftest.sleep", {"seconds": 60})
    try:
        with qtbot.waitSignal(sleeper.sig_progress, timeout=JOB_TIMEOUT_MS):
            sleeper.start()
        panel.shapes.job = sleeper
        with (
            qtbot.waitSignal(sleeper.sig_failed, timeout=JOB_TIMEOUT_MS),
            qtbot.waitSignal(panel.sig_loaded, timeout=JOB_TIMEOUT_MS),
        ):
            window.open_path(samples / "small_cnn.dynamo.onnx")
        assert sleeper.wait_done(5000) and not sleeper.active
        assert panel.shapes.job is not sleeper  # the new model's own (after its paint)
    finally:
        if sleeper.active:  # stopped even when the test fails
            sleeper.cancel()
            sleeper.wait_done(5000)


def test_groups_and_nodes_share_one_scale_with_the_legend(
    qtbot, make_window, samples: Path
) -> None:
    """A collapsed group summing 90 % of the time was painted the cheapest colour (groups had a
    scale of their own): now the hottest box, leaf or group, gets the top colour and the legend
    shows that same scale and how groups got their colour."""
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    ir = panel.model.ir
    names = [ir.label(i) for i in range(ir.node_count)]
    ms = {name: 1.0 for name in names}
    ms["/stem/stem.0/Conv"] = 3.0  # the hottest leaf; its collapsed stem group sums 4
    panel.overlay("ms", ms, aggregate="sum")
    canvas = panel.canvas
    scene = canvas.scene
    groups = np.flatnonzero(scene.box_kind == BOX_GROUP)
    assert len(groups), "the sample opens with its modules collapsed"
    _low, high = canvas.value_scale
    assert high >= 3.0 + 1.0  # a group summing several nodes tops the scale, not the leaf
    top = panel.legend.entries[-1]
    assert top[0] == f"{high:.4g}"
    hottest = max(groups.tolist(), key=lambda b: palette_sum(panel, b))
    assert tuple(canvas.fills[hottest]) == top[1]  # the hottest group wears the legend's top
    assert "collapsed groups: sum of their nodes" in panel.legend.text()
    panel.expand_to_depth(9)
    qtbot.waitUntil(lambda: not (panel.canvas.scene.box_kind == BOX_GROUP).any(), timeout=5000)
    assert canvas.value_scale == (1.0, 3.0)  # all leaves: the scale is theirs again
    assert panel.legend.entries[-1][0] == "3" and "collapsed groups" not in panel.legend.text()


def palette_sum(panel, box: int) -> float:
    from deploylens.gui.graph.palette import group_values

    canvas = panel.canvas
    return float(group_values(panel.model, canvas.scene, canvas.overlay)[box])


def test_support_overlay_paints_blocked_red_and_supported_green(
    qtbot, make_window, samples: Path
) -> None:
    from deploylens.core.graph.overlay import SEMANTIC_COLORS

    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    ir = panel.model.ir
    conv = next(i for i in range(ir.node_count) if ir.op_type(i) == "Conv")
    relu = next(i for i in range(ir.node_count) if ir.op_type(i) == "Relu")
    panel.overlay("support (TensorRT)", {ir.label(conv): "blocked", ir.label(relu): "supported"})
    panel.expand_to_depth(9)
    canvas = panel.canvas
    qtbot.waitUntil(lambda: not (canvas.scene.box_kind == BOX_GROUP).any(), timeout=5000)
    box = {int(ref): b for b, ref in enumerate(canvas.scene.box_ref) if
           canvas.scene.box_kind[b] == BOX_NODE}  # fmt: skip
    assert tuple(canvas.fills[box[conv]]) == SEMANTIC_COLORS["red"]
    assert tuple(canvas.fills[box[relu]]) == SEMANTIC_COLORS["green"]
    assert dict(panel.legend.entries)  # listed with the same colours
    assert [rgb for _, rgb in panel.legend.entries] == [
        SEMANTIC_COLORS["red"], SEMANTIC_COLORS["green"]
    ] or [rgb for _, rgb in panel.legend.entries] == [
        SEMANTIC_COLORS["green"], SEMANTIC_COLORS["red"]
    ]  # fmt: skip


def test_tensor_shapes_beside_edges_never_print_over_each_other(qtbot) -> None:
    """A node's outputs all leave from its bottom centre: a Split's three shapes were painted
    at one spot, one over another. Each shape now takes a free place along its edge (or is
    left out), at every zoom where shapes show."""
    from onnx import TensorProto, helper

    outs = [f"part{i}" for i in range(3)]
    nodes = [helper.make_node("Split", ["x"], outs, axis=1, name="split")]
    nodes += [helper.make_node("Relu", [o], [f"y{i}"], name=f"relu{i}") for i, o in enumerate(outs)]
    info = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 4, 8]) for o in outs]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12, 8])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, 4, 8]) for i in range(3)],
        value_info=info,
    )  # fmt: skip
    model = GraphScene(build_model_ir(helper.make_model(graph)))
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(900, 600)
    canvas.set_model(model)
    canvas.show()
    for scale in (0.6, 1.0, 2.0):
        canvas.scale = scale
        canvas.center_on_box(int(canvas.scene.node_box[0]))
        canvas.grab()
        rects = canvas.shape_labels.rects
        assert canvas.last_paint_stats["shapes"] == len(rects) >= 3, scale
        assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1 :])


def test_the_fitted_view_follows_the_window_to_its_size_until_the_user_zooms(
    qtbot, make_window, tmp_path: Path
) -> None:
    """Launched with a file, the fit was computed before the window reached its size: the graph
    opened at a fraction of a 1920 or 4K canvas until Fit was pressed. A view still fitted is
    fitted again on resize; once the user zooms, a resize leaves their view alone."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu{i}") for i in range(40)]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("t40", TensorProto.FLOAT, [1, 8])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, tmp_path / "chain.onnx")
    window = make_window(persist_layout=False)
    window.resize(640, 420)
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        window.open_path(tmp_path / "chain.onnx")
    canvas = window.graph_panel.canvas
    qtbot.waitUntil(lambda: canvas.fitted, timeout=5000)
    small = canvas.scale
    window.resize(1900, 1060)
    qtbot.waitUntil(lambda: canvas.height() > 600, timeout=5000)
    assert canvas.fitted and canvas.scale > small * 1.3  # a 40-node chain is height-bound
    fit_h = canvas.height() / (canvas.scene.height + 40.0)
    fit_w = canvas.width() / (canvas.scene.width + 40.0)
    assert canvas.scale == pytest.approx(min(1.5, fit_h, fit_w))
    canvas.zoom(2.0)
    zoomed = canvas.scale
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: canvas.height() < 600, timeout=5000)
    assert not canvas.fitted and canvas.scale == zoomed


def test_a_conv_box_shows_its_weights_under_its_op_type(qtbot, make_window, samples: Path) -> None:
    """Netron draws ``W⟨…⟩ B⟨…⟩`` inside a Conv; our boxes showed only the output (issue 45)."""
    from deploylens.core.graph.ir import OP

    window = make_window(persist_layout=False)
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        window.open_path(samples / "small_cnn.dynamo.onnx")
    canvas = window.graph_panel.canvas
    ir = canvas.model.ir
    conv = next(n for n in range(ir.node_count) if ir.kind[n] == OP and ir.op_type(n) == "Conv")
    lines = canvas._node_lines(conv, 200.0)
    assert lines[0] == "Conv" and lines[1] == "W⟨16×3×3×3⟩ B⟨16⟩"
    assert canvas._node_lines(conv, 20.0) == ["Conv"]  # too small for detail: the op type only
    # as painted at 1:1: the box is laid out a line taller and wide enough for the weights, so
    # every Conv on screen reads its W⟨…⟩ B⟨…⟩ whole (they were cut until 1.5× zoom)
    window.graph_panel.expand_to_depth(6)
    qtbot.waitUntil(lambda: canvas.scene is not None and len(canvas.scene.box_kind) > 12)
    canvas.zoom(1.0 / canvas.scale)
    convs = [b for b in range(len(canvas.scene.box_kind))
             if canvas.scene.box_kind[b] == BOX_NODE and ir.kind[int(canvas.scene.box_ref[b])] == OP
             and ir.op_type(int(canvas.scene.box_ref[b])) == "Conv"]  # fmt: skip
    seen = 0
    for box in convs:
        canvas.center_on_box(box)
        canvas.grab()
        painted = {label.box: label.text for label in canvas.box_labels}
        expected = canvas._node_lines(int(canvas.scene.box_ref[box]), 200.0)[1]
        assert painted.get(box) == f"Conv\n{expected}", painted.get(box)
        seen += 1
    assert seen >= 3


def test_a_click_on_the_plus_badge_expands_and_on_the_minus_collapses(
    qtbot, make_window, samples: Path
) -> None:
    """The group's + badge only selected the group (issue 45); a click on it now expands, and
    the expanded frame's − badge collapses it again. A click elsewhere on the group selects."""
    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.torchscript.onnx")
    canvas = panel.canvas

    def stage1_box(kind: int) -> int:
        return next(
            b for b in range(len(canvas.scene.box_kind))
            if canvas.scene.box_kind[b] == kind
            and panel.model.ir.groups.name[canvas.scene.box_ref[b]] == "stage1"
        )  # fmt: skip

    def badge_point(box: int) -> QPoint:
        x, y = canvas._badge_xy(box)
        point = canvas.transform().map(QPointF(x + 6, y + 6))
        return QPoint(int(point.x()), int(point.y()))

    group = stage1_box(BOX_GROUP)
    boxes = len(canvas.scene.box_kind)
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=box_center(canvas, group))
    assert len(canvas.scene.box_kind) == boxes  # the card itself: a selection, no expansion
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=badge_point(group))
    assert len(canvas.scene.box_kind) > boxes and BOX_FRAME in canvas.scene.box_kind.tolist()
    frame = stage1_box(BOX_FRAME)
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=badge_point(frame))
    assert len(canvas.scene.box_kind) == boxes


def test_properties_show_the_selected_nodes_overlay_value(
    qtbot, make_window, samples: Path
) -> None:
    """The colour on a node had no figure behind it in Properties (issue 45): the overlay on
    screen gives its row — the value as the legend writes it, and the legend's words."""
    from deploylens.core.graph.ir import OP

    _window, panel = open_graph(qtbot, make_window, samples / "small_cnn.dynamo.onnx")
    panel.overlay("latency", {"node_Conv_27": 1.5, "node_relu": 0.25}, "ms per node")
    panel.overlay_box.setCurrentText("latency")
    ir = panel.model.ir
    conv = next(n for n in range(ir.node_count)
                if ir.kind[n] == OP and ir.node_proto(n).name == "node_Conv_27")  # fmt: skip
    panel._on_selected(BOX_NODE, conv)
    text = panel.properties.text()
    assert text.startswith("Overlay") and "latency | 1.5 | ms per node" in text
    gemm = next(n for n in range(ir.node_count) if ir.kind[n] == OP and ir.op_type(n) == "Gemm")
    panel._on_selected(BOX_NODE, gemm)
    assert "latency | no value" in panel.properties.text()


def test_properties_wrap_long_values_at_laptop_width(qtbot) -> None:
    """At 1366×768 the Properties pane cut values ("float32 [64] weight (Identi…", issue 45):
    a row is now as tall as its value wrapped to the column, never elided, and shrinks back to
    one line when the pane is wide enough."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QFontMetrics

    from deploylens.core.graph.details import Section
    from deploylens.gui.graph.properties import WRAP, PropertiesView

    view = PropertiesView()
    qtbot.addWidget(view)
    view.resize(320, 400)
    view.show()
    long = "float32 [64, 64, 3, 3] weight (Identity of onnx::Conv_123, shared by /layer1/conv2)"
    view.show_sections([Section("Inputs", [("W", long, "initializer"), ("B", "float32 [64]", "")])])
    tree = view.tree
    assert tree.textElideMode() == Qt.TextElideMode.ElideNone
    section = tree.topLevelItem(0)
    assert section is not None
    row, other = section.child(0), section.child(1)
    assert row is not None and other is not None
    rect = tree.visualRect(tree.indexFromItem(row, 1))
    line = QFontMetrics(tree.font()).height()
    needed = QFontMetrics(tree.font()).boundingRect(QRect(0, 0, rect.width() - 6, 0), WRAP, long)
    assert needed.height() >= 2 * line  # the value does not fit one line at this width …
    assert rect.height() >= needed.height()  # … and its row holds every wrapped line
    short = tree.visualRect(tree.indexFromItem(other, 1))
    assert short.height() < 2 * line  # a short value keeps one line
    view.resize(1200, 400)
    qtbot.waitUntil(lambda: tree.visualRect(tree.indexFromItem(row, 1)).height() < 2 * line)


def attention_block() -> onnx.ModelProto:
    """Scaled dot-product attention as exporters write it, built here: three MatMul branches
    (query, key, value), Transpose, MatMul, Softmax, MatMul, grouped under /attn/…"""
    from onnx import TensorProto, helper, numpy_helper

    def weight(name: str) -> onnx.TensorProto:
        return numpy_helper.from_array(np.zeros((16, 16), np.float32), name)

    nodes = [
        helper.make_node("MatMul", ["x", f"w_{b}"], [b], name=f"/attn/{b}/MatMul")
        for b in ("query", "key", "value")
    ]
    nodes += [
        helper.make_node("Transpose", ["key"], ["kt"], perm=[0, 2, 1], name="/attn/Transpose"),
        helper.make_node("MatMul", ["query", "kt"], ["scores"], name="/attn/MatMul"),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1, name="/attn/Softmax"),
        helper.make_node("MatMul", ["probs", "value"], ["y"], name="/attn/MatMul_1"),
    ]
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16])],
        initializer=[weight(f"w_{b}") for b in ("query", "key", "value")],
    )  # fmt: skip
    return helper.make_model(graph)


def test_matmul_and_softmax_are_named_at_a_blocks_zoom(qtbot) -> None:
    """At the zoom that shows a whole attention block, the MatMul and Softmax boxes are
    narrower than their op type at the smallest readable font: they were painted blank, where
    Netron names them. The op type is now written whole beside its box, on no other box or
    label. Asserted on the labels as painted (text and screen rectangle)."""
    from PySide6.QtGui import QFont, QFontMetricsF

    from deploylens.core.graph.ir import OP
    from deploylens.gui.graph.labels import MIN_FONT_PT

    model = GraphScene(build_model_ir(attention_block()))
    model.expand_to_depth(4)
    canvas = GraphCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(1366, 700)
    canvas.set_model(model)
    canvas.show()
    ir, scene = model.ir, canvas.scene
    assert scene is not None
    nodes = [
        b for b in range(len(scene.box_kind))
        if scene.box_kind[b] == BOX_NODE and ir.kind[int(scene.box_ref[b])] == OP
    ]  # fmt: skip
    for scale in (0.3, 0.4):
        canvas.scale = scale
        canvas.center_on_box(nodes[len(nodes) // 2])
        canvas.grab()
        font = QFont(canvas.font_small)
        font.setPointSizeF(MIN_FONT_PT)
        text_px = QFontMetricsF(font).horizontalAdvance("MatMul")
        softmax = next(b for b in nodes if ir.op_type(int(scene.box_ref[b])) == "Softmax")
        width = float(scene.box_rect[softmax, 2] - scene.box_rect[softmax, 0]) * scale
        assert width < text_px, (scale, width, text_px)  # too narrow to hold its name
        named = {label.box: label for label in canvas.box_labels}
        for box in nodes:
            op = ir.op_type(int(scene.box_ref[box]))
            assert box in named and named[box].text.split("\n")[0] == op, (scale, op)
        rects = [label.rect for label in canvas.box_labels if label.beside]
        assert len(rects) >= 3, scale  # the weightless MatMuls and the Softmax, beside
        assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1 :])
        others = canvas.transform()
        for rect in rects:
            for box in nodes:
                x0, y0, x1, y1 = scene.box_rect[box].tolist()
                on_screen = others.mapRect(QRectF(x0, y0, x1 - x0, y1 - y0))
                assert not rect.intersects(on_screen), (scale, rect, on_screen)


def test_the_open_checks_the_model_after_its_graph_is_painted(
    qtbot, make_window, tmp_path: Path
) -> None:
    """Opening a model ran onnx's checker and strict shape inference (~0.6 s of CPU on a
    100k-node model) in the open's worker beside the GUI's layout, and the shapes job's worker
    started as the graph was painted. The open's summary now comes unchecked, and one job,
    started after the canvas painted the graph, brings the shapes and the checker's findings:
    the summary then lists what ``inspect`` lists."""
    from deploylens.core.model.summary import inspect_model
    from tests.core.test_summary import _weighty_with_errors

    path = tmp_path / "bad.onnx"
    path.write_bytes(_weighty_with_errors().SerializeToString())
    window = make_window()
    window.resize(1500, 950)
    window.show()
    panel, document = window.graph_panel, window.document
    painted_before_job: list[bool] = []  # for each shapes job: had the canvas painted?
    paints: list[int] = []
    real_paint = panel.canvas.paintEvent

    def paint(event) -> None:
        real_paint(event)
        paints.append(len(paints))

    panel.canvas.paintEvent = paint

    def added(job) -> None:
        if job.method == "graph.shapes":
            painted_before_job.append(bool(paints))

    window.jobs.sig_job_added.connect(added)
    shown: list[str] = []  # the summary panel's text as each signal came
    for signal in (document.sig_opened, document.sig_checked):
        signal.connect(lambda _s: shown.append(window.summary_panel.visible_text()))
    window.open_path(path)
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=JOB_TIMEOUT_MS)
    inspect = next(job for job in window.jobs.jobs if job.method == "model.inspect")
    assert inspect.params["check"] is False and not document.checking
    assert "checking …" in shown[0]
    assert painted_before_job == [True]  # one shapes job, after the first paint
    expected = inspect_model(path).warnings
    assert any("bad_matmul" in w for w in expected)
    assert document.summary is not None and document.summary.warnings == expected
    assert "checking" not in shown[1] and all(w in shown[1] for w in expected)
    assert panel.model is not None and panel.model.ir.value_types["h"] == ("float32", [4, 256])


def test_findings_that_come_before_their_summary_wait_for_it(
    qtbot, make_window, samples: Path
) -> None:
    """The shapes job (another worker) may answer before the open's own summary (a slow
    worker, a busy machine): its findings were dropped and the summary said "checking …"
    for good. They now wait for the summary of the same open."""
    window = make_window()
    document = window.document
    path = (samples / "small_cnn.dynamo.onnx").resolve()
    checked: list[list[str]] = []
    document.sig_checked.connect(lambda summary: checked.append(list(summary.warnings)))
    with qtbot.waitSignal(document.sig_opened, timeout=JOB_TIMEOUT_MS):
        window.open_path(path)
        assert document.summary is None  # the summary is still on its way
        document.add_findings(str(path), ["shape inference: found first"])
    qtbot.waitUntil(lambda: bool(checked), timeout=JOB_TIMEOUT_MS)
    assert checked[0][-1] == "shape inference: found first" and not document.checking
    assert "found first" in window.summary_panel.visible_text()
