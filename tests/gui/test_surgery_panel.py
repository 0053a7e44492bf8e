"""The Surgery view with real widgets and the real worker on a TorchScript export the test
makes: a pattern applied from the panel, the edited model opened in the graph with its changes
painted, edited vs original and the TensorRT-RTX parser verdict in the banner, undo/redo
replaying the chain, Shift+drag choosing nodes for an extraction, a plugin node that nothing
can run said as such, the graph's context menu, and the chain surviving a project round trip."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from PySide6.QtCore import QPoint, Qt

from deploylens.core.errors import UserError
from deploylens.core.surgery.steps import Step
from deploylens.gui.common.styles import OK_STYLE, WARN_STYLE
from deploylens.gui.surgery.panel import DIFF_OVERLAY, parse_attrs
from tests.core.test_surgery import export_block
from tests.gui.conftest import JOB_TIMEOUT_MS, export_sample, wait_opened

SLOW_MS = 3 * JOB_TIMEOUT_MS


def run_and_wait(qtbot, window, action) -> None:
    panel = window.surgery_panel
    with qtbot.waitSignal(window.document.sig_opened, timeout=SLOW_MS):
        action()
    qtbot.waitUntil(lambda: panel.job is None, timeout=SLOW_MS)
    qtbot.waitUntil(lambda: window.graph_panel.loaded_path == panel.current, timeout=SLOW_MS)


def test_patterns_undo_redo_extract_and_project(qtbot, make_window, tmp_path: Path, rtx) -> None:
    original = export_block(tmp_path / "block.onnx", 12)
    window = make_window()
    wait_opened(qtbot, window, original)
    panel = window.surgery_panel
    assert panel.base == str(original) and not panel.buttons["undo"].isEnabled()
    panel.pattern.setCurrentText("layernorm")
    run_and_wait(qtbot, window, panel.apply_pattern)
    edited = Path(panel.current)
    assert edited.name == "block.edited.onnx" and window.graph_panel.path == str(edited)
    assert any(n.op_type == "LayerNormalization" for n in onnx.load(edited).graph.node)
    assert panel.banner.styleSheet() == OK_STYLE, panel.banner.text()
    assert (
        "Matches the original" in panel.banner.text()
        and "tensorrt_rtx parses" in panel.banner.text()
    )
    added = panel.report.diff.added
    assert len(added) == 1 and panel.diff.topLevelItem(0).text(0) == "added (1)"
    assert DIFF_OVERLAY in window.graph_panel.overlays  # the change is painted on the graph
    run_and_wait(qtbot, window, lambda: panel.apply_pattern("gelu"))
    assert [s.pattern for s in panel.steps] == ["layernorm", "gelu"]
    run_and_wait(qtbot, window, panel.undo)
    assert [s.pattern for s in panel.steps] == ["layernorm"] and panel.buttons["redo"].isEnabled()
    assert not any(n.op_type == "Gelu" for n in onnx.load(panel.current).graph.node)
    run_and_wait(qtbot, window, panel.redo)
    assert [s.pattern for s in panel.steps] == ["layernorm", "gelu"]
    assert any(n.op_type == "Gelu" for n in onnx.load(panel.current).graph.node)

    # the chain is saved with the project and comes back with it
    window.document.project.tables["surgery"] = panel.project_table()
    saved = window.document.save_project(tmp_path / "p.deploylens.toml")
    second = make_window()
    wait_opened(qtbot, second, saved)
    assert [s.pattern for s in second.surgery_panel.steps] == ["layernorm", "gelu"]
    assert second.surgery_panel.base == str(original)

    # Shift+drag over the whole graph chooses every node; extracting them keeps the model whole
    canvas = window.graph_panel.canvas
    canvas.fit()
    qtbot.mousePress(
        canvas, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, QPoint(2, 2)
    )
    qtbot.mouseMove(canvas, QPoint(canvas.width() // 2, canvas.height() // 2))
    qtbot.mouseMove(canvas, QPoint(canvas.width() - 2, canvas.height() - 2))
    qtbot.mouseRelease(
        canvas,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.ShiftModifier,
        QPoint(canvas.width() - 2, canvas.height() - 2),
    )
    assert len(panel.chosen) >= 4 and panel.buttons["extract"].isEnabled()
    run_and_wait(qtbot, window, panel.extract)
    assert panel.steps[-1].op == "extract" and panel.steps[-1].outputs == ["y"]
    assert "Matches the original" in panel.banner.text()


def test_a_plugin_node_nothing_can_run_is_said_and_the_menu_offers_surgery(
    qtbot, make_window, samples: Path, tmp_path: Path, rtx
) -> None:
    model = tmp_path / "cnn.onnx"
    model.write_bytes((samples / "small_cnn.torchscript.onnx").read_bytes())
    window = make_window()
    wait_opened(qtbot, window, model)
    qtbot.waitUntil(lambda: window.graph_panel.loaded_path == str(model), timeout=SLOW_MS)
    graph, panel = window.graph_panel, window.surgery_panel
    conv = next(n for n in onnx.load(model).graph.node if n.op_type == "Conv")
    ir = graph.model.ir
    node = next(
        i
        for i in range(ir.node_count)
        if (p := ir.node_proto(i)) is not None and p.name == conv.name
    )
    graph.canvas.set_highlight(node)  # one node chosen
    assert panel.chosen == [conv.name]
    menu = graph.context_menu(1, node)
    surgery = next(a.menu() for a in menu.actions() if a.text() == "Surgery")
    titles = [a.text() for a in surgery.actions()]
    assert "Fold constants" in titles and "Extract the 1 chosen node(s)" in titles
    panel.plugin_op.setText("FancyConv")
    panel.plugin_attrs.setText("plugin_version=1; plugin_namespace=; kernel=3,3; alpha=0.5")
    run_and_wait(qtbot, window, panel.replace)
    node_proto = next(n for n in onnx.load(panel.current).graph.node if n.op_type == "FancyConv")
    assert node_proto.domain == "trt.plugins" and list(node_proto.input) == list(conv.input)
    names = {a.name for a in node_proto.attribute}  # typed ones, and the Conv's own by default
    assert {"plugin_version", "kernel", "alpha", "conv_strides", "conv_pads"} <= names
    assert panel.banner.styleSheet() == WARN_STYLE  # neither ORT nor TensorRT can run it: said
    assert (
        "Not compared" in panel.banner.text() and "cannot parse: FancyConv" in panel.banner.text()
    )
    assert parse_attrs("a=1; b=0.5; c=1,2; d=x") == {"a": 1, "b": 0.5, "c": [1, 2], "d": "x"}
    with pytest.raises(UserError, match="not name=value"):
        parse_attrs("oops")
    panel.replace()  # the edited model opened, so nothing is chosen now: said, not run
    assert "Choose nodes" in panel.banner.text() and panel.job is None
    panel.push(Step(op="pattern", pattern="nope"))  # refused before any job
    assert "unknown pattern" in panel.banner.text() and panel.job is None


def test_the_export_ladder_surgery_rung_in_one_click(qtbot, make_window, tmp_path: Path) -> None:
    """deform_conv2d fails to export; the last rung exports it with the plugin and rewrites the
    custom node to TensorRT's plugin node, in the Surgery view, checked against the export."""
    window = make_window()
    panel = window.export_panel
    failed = export_sample(
        qtbot, window, "deform_conv", "torchscript", 17, tmp_path / "deform.onnx"
    )
    assert not failed.ok
    top = panel.findings.topLevelItem(0)
    fixes = [top.child(i).data(0, Qt.ItemDataRole.UserRole) for i in range(top.childCount())]
    surgery = fixes[-1]
    assert surgery.rung == "graph surgery"
    assert surgery.settings.surgery == ["deform_to_trt"]
    panel.findings.setCurrentItem(top.child(len(fixes) - 1))
    assert panel.apply_button.isEnabled()
    done = window.surgery_panel
    panel.apply_button.click()
    qtbot.waitUntil(lambda: done.report is not None, timeout=4 * JOB_TIMEOUT_MS)
    assert done.base == str(tmp_path / "deform.onnx")
    nodes = onnx.load(done.current).graph.node
    assert any(n.op_type == "ModulatedDeformConv2d" and n.domain == "trt.plugins" for n in nodes)
    assert done.report.compare is not None and done.report.compare.passed
    assert "Matches the original" in done.banner.text()
