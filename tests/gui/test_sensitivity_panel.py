"""The Sensitivity view with the real worker: the ranked layers, their overlay on the graph,
the error-vs-kept curve with the budget line, a row selecting its node, and the plan built by
TensorRT-RTX ahead of time (where installed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.gui.conftest import JOB_TIMEOUT_MS, wait_opened


def test_sensitivity_ranks_paints_plots_and_builds(
    qtbot, make_window, samples: Path, tmp_path: Path, rtx
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(8):
        np.save(data / f"{i}.npy", np.random.default_rng(i).random((3, 32, 32), dtype=np.float32))
    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.sensitivity_panel
    panel.run()  # no data yet: one sentence, nothing submitted
    assert "calibration data" in panel.banner.text() and panel.job is None
    panel.data.setText(str(data))
    panel.evaluate.setValue(8)
    panel.budget.setText("x")
    panel.run()
    assert "not a number" in panel.banner.text()
    panel.budget.setText("0.05")
    panel.run()
    qtbot.waitUntil(lambda: panel.report is not None, timeout=JOB_TIMEOUT_MS)
    # 8 calibration samples: the panel says what the CLI says about so few (issue 45).
    assert "Note: calibrated on 8 sample(s)" in panel.banner.text()
    # Every node the quantizer fed from a DequantizeLinear is a candidate (ORT's QDQ format
    # quantizes Relu/MaxPool/ReduceMean too), the 3 Conv and the Gemm among them.
    rows = {panel.table.item(r, 1).text(): panel.table.item(r, 2).text()
            for r in range(panel.table.rowCount())}  # fmt: skip
    assert {"node_Conv_27", "node_Conv_28", "node_Conv_29", "node_linear"} <= set(rows)
    assert set(rows.values()) <= {"Conv", "Relu", "MaxPool", "ReduceMean", "Reshape", "Gemm"}
    assert panel.table.item(0, 0).text() == "1"  # ranked, most sensitive first
    xs, _ = panel.curve.getData()
    assert xs[0] == 0 and panel.budget_line.value() == 0.05
    axis = panel.plot_box.plot.getAxis("bottom")
    ticks = [v for level in axis.tickValues(*axis.range, axis.width() or 400) for v in level[1]]
    assert ticks and all(float(v).is_integer() for v in ticks)  # whole layers only
    graph = window.graph_panel
    qtbot.waitUntil(lambda: any("sensitivity" in name for name in graph.overlays), timeout=5000)
    with qtbot.waitSignal(panel.sig_node_selected) as selected:
        panel.table.cellClicked.emit(0, 0)
    assert selected.args[0] == panel.table.item(0, 1).text()
    panel.build_button.click()
    qtbot.waitUntil(lambda: panel.banner.text().startswith("Built"), timeout=JOB_TIMEOUT_MS)
    assert "TensorRT-RTX" in panel.banner.text() and "sm89" in panel.banner.text()


def test_the_plot_is_made_when_its_panel_is_first_painted(qtbot, make_window) -> None:
    """pyqtgraph comes with the first plot (``LazyPlot``): a dock tabbed behind another is
    shown but never painted, so its plot waits until the dock comes to the front."""
    window = make_window(persist_layout=False)
    qtbot.wait(50)
    box = window.sensitivity_panel.plot_box
    assert not box.built and window.sensitivity_panel.curve is None
    window.docks["Sensitivity"].raise_()
    qtbot.waitUntil(lambda: box.built, timeout=5000)
    assert window.sensitivity_panel.curve is not None and box.plot.parent() is box
