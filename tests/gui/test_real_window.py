"""A real X11 window under Xvfb: .ci/run runs this with ``xvfb-run`` and QT_QPA_PLATFORM=xcb."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtGui import QGuiApplication

from tests.gui.conftest import wait_opened
from tests.gui.test_demo import distinct_colours

pytestmark = [
    pytest.mark.xvfb,
    pytest.mark.skipif(
        os.environ.get("QT_QPA_PLATFORM") != "xcb" or not os.environ.get("DISPLAY"),
        reason="needs a real X display (xvfb-run with QT_QPA_PLATFORM=xcb)",
    ),
]


def test_real_window_screenshot(qtbot, make_window, samples: Path, tmp_path: Path) -> None:
    assert QGuiApplication.platformName() == "xcb"
    window = make_window(persist_layout=False)
    qtbot.waitExposed(window)
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    qtbot.wait(300)
    png = tmp_path / "real_window.png"
    # Grab from the X server's screen, not just the widget's own painting.
    screen = window.screen().grabWindow(0)
    assert screen.save(str(png))
    image = screen.toImage()
    assert distinct_colours(image) > 20
    assert "image | tensor(float32) | [1, 3, 32, 32]" in window.summary_panel.visible_text()
    keep = os.environ.get("DEPLOYLENS_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        screen.save(str(Path(keep) / "real_window.png"))


def test_real_window_graph_screenshot(qtbot, make_window, samples: Path) -> None:
    window = make_window(persist_layout=False)
    window.resize(1500, 950)
    qtbot.waitExposed(window)
    panel = window.graph_panel
    with qtbot.waitSignal(panel.sig_loaded, timeout=60_000):
        window.open_path(samples / "small_cnn.torchscript.onnx")
    window.docks["Graph"].raise_()
    panel.expand_to_depth(4)
    panel.canvas.fit()
    panel.canvas.zoom(1.0 / panel.canvas.scale)  # 1:1, where every op is labelled
    qtbot.wait(300)
    shot = window.screen().grabWindow(0)
    graph = panel.canvas.grab()
    assert distinct_colours(graph.toImage(), step=3) > 10
    assert panel.canvas.last_paint_stats["labels"] >= 10  # op labels drawn, not just boxes
    assert panel.canvas.last_paint_stats["edges"] >= 5
    keep = os.environ.get("DEPLOYLENS_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shot.save(str(Path(keep) / "real_window_graph.png"))
