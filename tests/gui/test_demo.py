"""``deploylens demo``: the README's main job, headless, with a PNG of the main window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage, QPixmap

from tests.core.test_cli import DEPLOYLENS


def distinct_colours(image: QImage, step: int = 7) -> int:
    colours = {
        image.pixel(x, y)
        for x in range(0, image.width(), step)
        for y in range(0, image.height(), step)
    }
    return len(colours)


def test_demo_writes_report_and_a_real_screenshot(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)  # the demo itself must go headless without a display
    out = tmp_path / "demo"
    result = subprocess.run(
        [DEPLOYLENS, "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["screenshot"] == str(out / "main_window.png")
    assert report["environment"]["python"]["executable"]
    failed, fixed = report["export"]  # asinh at opset 9: fails, then the plugin fixes it
    assert not failed["ok"] and fixed["ok"]
    (finding,) = failed["findings"]
    steps = [fix["step"] for fix in finding["fixes"]]
    assert len(steps) >= 4 and steps == list(range(1, len(steps) + 1))  # "fixes": [] before
    image = QImage(str(out / "main_window.png"))
    assert (image.width(), image.height()) == (1400, 860)
    assert distinct_colours(image) > 20  # text, tables, tabs: not a blank or single-colour grab
    assert "Main window: " in result.stdout
    assert sys.executable  # the demo ran in this interpreter's environment


def test_the_screenshot_waits_for_the_jobs_opening_a_model_starts(
    qtbot, monkeypatch, samples: Path, tmp_path: Path
) -> None:
    """The demo's picture was taken mid-job (progress bars, half-filled panels): the grab now
    waits until the shapes and support jobs the open started have finished — the shapes job,
    which brings the checker's findings, starts only after the graph painted."""
    from deploylens.gui.main_window import MainWindow
    from deploylens.gui.screenshot import render_main_window

    running_at_grab: list[int] = []
    checking: list[bool] = []
    real_grab = MainWindow.grab

    def grab(window: MainWindow) -> QPixmap:
        running_at_grab.append(len(window.jobs.active()))
        checking.append(window.document.checking)
        return real_grab(window)

    monkeypatch.setattr(MainWindow, "grab", grab)
    png = render_main_window(samples / "small_cnn.dynamo.onnx", tmp_path / "shot.png")
    assert png.is_file() and running_at_grab == [0] and checking == [False]
