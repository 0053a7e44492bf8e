"""The Op support panel with the real registries: matrix, filters, blockers, graph links."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from tests.gui.conftest import JOB_TIMEOUT_MS


def test_support_panel_with_a_model(qtbot, make_window, samples: Path) -> None:
    window = make_window()
    window.resize(1500, 950)
    panel = window.support_panel
    with qtbot.waitSignal(panel.sig_ready, timeout=120_000):
        window.docks["Op support"].raise_()
        window.docks["Op support"].show()
    model = panel.table_model
    assert model.rowCount() > 300  # every op of every domain, ORT contrib ops included
    assert any(d == "com.microsoft" for d, _ in model.rows)
    assert "torch 2." in panel.status.text() and "fall back" in panel.status.text()
    row = model.rows.index(("ai.onnx", "Asinh"))
    cell = model.index(row, model.first_opset_column + 8)  # opset 9
    tooltip = model.data(cell, Qt.ItemDataRole.ToolTipRole)
    assert tooltip.startswith("Asinh at opset 9: version 9 (introduced)")
    # The op is the row's header, so it stays on screen while the opsets scroll (issue 45);
    # the marks and colours have a legend above the table.
    assert model.headerData(row, Qt.Orientation.Vertical) == "Asinh"
    assert panel.table.verticalHeader().isVisibleTo(panel) and panel.table.isColumnHidden(0)
    legend = panel.legend.text()
    assert "introduced" in legend and "✓</span>" in legend.replace("&nbsp;", "") and "✗" in legend
    with (
        qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS),
        qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS),
    ):
        window.open_path(samples / "asinh.dynamo.onnx")
    assert {op for _, op in model.rows} == {"Asinh", "Mul"}  # "ops in the open model"
    with qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS):
        panel.target.setCurrentText("trt-8.6")
    assert panel.findings.topLevelItem(0).text(1).startswith("BLOCKED")
    with qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS):
        panel.target.setCurrentText("ort-cpu")
    assert panel.findings.topLevelItem(0).text(1).startswith("OK")
    panel.blockers_only.setChecked(True)
    assert model.rowCount() == 0
    panel.blockers_only.setChecked(False)
    asinh_row = next(i for i, (_, op) in enumerate(model.rows) if op == "Asinh")
    panel.table.clicked.emit(model.index(asinh_row, 0))
    assert window.graph_panel.canvas.highlight.sum() == 1
    panel.emit_overlay()
    assert window.graph_panel.overlay_box.currentText() == "support (ort-cpu)"


def test_open_model_is_parsed_once_for_every_panel(
    qtbot, make_window, samples: Path, monkeypatch
) -> None:
    """The graph view and the op-support panel share the document's one parse (the GUI
    parsed the open model once per panel): every GUI module's read_model is counted."""
    import sys

    import deploylens.gui.main_window  # noqa: F401  (every panel module imported before patching)
    from deploylens.core.model import loading

    calls: list[str] = []
    original = loading.read_model

    def counted(path, *args, **kwargs):
        calls.append(str(path))
        return original(path, *args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("deploylens.gui") and getattr(module, "read_model", None):
            monkeypatch.setattr(module, "read_model", counted)
    window = make_window()
    panel = window.support_panel
    with qtbot.waitSignal(panel.sig_ready, timeout=120_000):
        window.docks["Op support"].raise_()
        window.docks["Op support"].show()
    with (
        qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS),
        qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS),
    ):
        window.open_path(samples / "asinh.dynamo.onnx")
    assert calls == [str((samples / "asinh.dynamo.onnx").resolve())]
    assert window.document.parses == 1
    assert panel.model_proto is window.document.proto is not None
    assert window.graph_panel.loaded_path == calls[0] and window.graph_panel.model is not None


def test_the_gui_parses_while_the_worker_summarizes_and_panels_see_the_summary_first(
    qtbot, make_window, samples: Path
) -> None:
    """The worker says when it has parsed the file (InspectRequest.PARSED): the GUI's own parse
    starts then — a file that crashes the parser has crashed the worker first — not after the
    checker and summary; the panels still get the summary before the parsed model (the graph
    alone shows that parse at once: it does not wait for the checker)."""
    window = make_window()
    document = window.document
    order: list[str] = []
    started_before_summary: list[bool] = []
    original = document._on_summary

    def on_summary(job, summary) -> None:
        started_before_summary.append(document.parses_started(summary.path))
        original(job, summary)

    document._on_summary = on_summary
    document.sig_opened.connect(lambda summary: order.append("opened"))
    document.sig_parsed.connect(lambda path, proto: order.append("parsed"))
    with qtbot.waitSignal(document.sig_parsed, timeout=JOB_TIMEOUT_MS):
        window.open_path(samples / "asinh.dynamo.onnx")
    qtbot.waitUntil(lambda: window.graph_panel.loaded_path != "", timeout=JOB_TIMEOUT_MS)
    assert started_before_summary == [True]
    assert order == ["opened", "parsed"] and document.parses == 1


def test_pytorch_ops_tab(qtbot, make_window) -> None:
    window = make_window()
    panel = window.support_panel
    with qtbot.waitSignal(panel.sig_ready, timeout=120_000):
        panel.load()
    names = [panel.aten_table.item(r, 0).text() for r in range(panel.aten_table.rowCount())]
    row = names.index("aten::asinh")
    assert panel.aten_table.item(row, 1).text() == "no symbolic"
    assert panel.aten_table.item(row, 2).text() == "yes"


def test_the_live_tensorrt_rtx_parser_is_a_column_and_the_default_target(
    qtbot, make_window, samples: Path, rtx
) -> None:
    """Where TensorRT-RTX is installed (CI), its parser answers for the open model."""
    window = make_window()
    panel = window.support_panel
    with qtbot.waitSignal(panel.sig_ready, timeout=120_000):
        window.docks["Op support"].raise_()
        window.docks["Op support"].show()
    model = panel.table_model
    header = model.headerData(model.live_column, Qt.Orientation.Horizontal)
    assert header.startswith("RTX 1.") and header.endswith("live")
    row = model.rows.index(("ai.onnx", "DeformConv"))
    assert model.data(model.index(row, model.live_column)) == "✗"  # no importer in TensorRT-RTX
    row = model.rows.index(("ai.onnx", "Conv"))
    assert model.data(model.index(row, model.live_column)) == "✓"
    assert panel.target.currentText() == "trt-rtx (live)"
    assert "TensorRT-RTX 1." in panel.status.text()
    assert "its plugin registry holds ROIAlign_TRT v2" in panel.status.text()  # asked live
    with (
        qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS),
        qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS),
    ):
        window.open_path(samples / "custom_fn_symbolic.torchscript.onnx")
    top = panel.findings.topLevelItem(0)
    assert top.text(0).startswith("trt-rtx (TensorRT-RTX 1.") and top.text(1).startswith("BLOCKED")
    blocker = top.child(0)
    assert blocker.text(0) == "customOp2" and "/customOp2" in blocker.text(2)
    assert "customOp2 version 1 in namespace 'custom_domain'" in blocker.child(0).text(1)
    assert panel.support_overlay()["/customOp2"] == "blocked"
    # the op table lists the model's custom-domain op (it is in no registry), not nothing
    rows = model.rows
    assert ("custom_domain", "customOp2") in rows and panel.in_model.isChecked()
    row = rows.index(("custom_domain", "customOp2"))
    assert model.data(model.index(row, model.model_column)) == "1"
    assert model.data(model.index(row, model.live_column)) == "✗"


def test_measured_columns_show_what_the_libraries_did(
    qtbot, make_window, rtx, tmp_path: Path, monkeypatch
) -> None:
    """The measured matrix in the table: none on a fresh machine (said so, with the button),
    then one measured by the real worker on TensorRT-RTX and ONNX Runtime (two ops, so the
    test stays short) shows as two columns whose hover gives each type's state and the
    library's own message; the documented TensorRT columns say they are documentation."""
    from deploylens.core.support import measure

    monkeypatch.setenv("DEPLOYLENS_CACHE_DIR", str(tmp_path))
    window = make_window()
    panel = window.support_panel
    with qtbot.waitSignal(panel.sig_ready, timeout=120_000):
        window.docks["Op support"].raise_()
        window.docks["Op support"].show()
    qtbot.waitUntil(
        lambda: "not measured on this machine yet" in panel.status.text(), timeout=JOB_TIMEOUT_MS
    )
    assert panel.measure_button.isEnabled()
    monkeypatch.setattr(measure, "QUICK_OPS", ("Relu", "Squeeze"))
    measure.load_measured(quick=True)  # the real probes, in a real worker
    panel.load_measured(only_cached=True)
    qtbot.waitUntil(lambda: panel.measured_data is not None, timeout=JOB_TIMEOUT_MS)
    model = panel.table_model
    column = model.measured_column
    assert model.headerData(column, Qt.Orientation.Horizontal) == "RTX measured"
    assert model.headerData(column + 1, Qt.Orientation.Horizontal) == "ORT measured"
    tip = model.headerData(column, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("measured on this machine: TensorRT-RTX 1.")
    documented = model.headerData(
        model.first_trt_column, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole
    )
    assert documented.startswith("from documentation, not measured")
    row = model.rows.index(("ai.onnx", "Squeeze"))
    shown = model.data(model.index(row, column))
    took, judged = (int(n) for n in shown.split("/"))
    assert 0 < took < judged  # some types build, TensorRT cannot hold others
    assert model.data(model.index(row, column), Qt.ItemDataRole.BackgroundRole).name() == "#ffe0b2"
    hover = model.data(model.index(row, column), Qt.ItemDataRole.ToolTipRole)
    assert "measured on TensorRT-RTX" in hover and "float: builds" in hover
    assert "uint16: parse-fails — " in hover  # the parser's own words follow
    conv = model.rows.index(("ai.onnx", "Conv"))  # not in this measurement's sample
    assert model.data(model.index(conv, column)) == "—"
    assert "not probed" in model.data(model.index(conv, column), Qt.ItemDataRole.ToolTipRole)
    assert "measured here (quick probe set" in panel.status.text()
    assert panel.measure_button.text() == "Measure again …"
    # the open model judged by the cells, without a parse: uint16 is no TensorRT type
    from onnx import TensorProto

    from tests.core.test_support_measured import _two_node_model

    (tmp_path / "models").mkdir()
    path = _two_node_model(tmp_path / "models" / "u16.onnx", TensorProto.UINT16)
    with qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS):
        window.open_path(path)
    with qtbot.waitSignal(panel.sig_analyzed, timeout=JOB_TIMEOUT_MS):
        panel.target.setCurrentText("trt-rtx (measured)")
    top = panel.findings.topLevelItem(0)
    assert "predicted from measured cells" in top.text(0) and top.text(1).startswith("BLOCKED")
    reasons = [top.child(i).text(1) for i in range(top.childCount())]
    assert any(
        "parse-fails in its measured cell ai.onnx::Squeeze::13::uint16" in r for r in reasons
    )
