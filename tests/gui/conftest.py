"""GUI fixtures: windows that are closed after each test, with no worker left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QProcess

from deploylens.core.export.result import ExportResult
from deploylens.gui.common.qt_app import gc_on_gui_thread
from deploylens.gui.main_window import MainWindow

JOB_TIMEOUT_MS = 30_000


@pytest.fixture(autouse=True)
def _gc_on_gui_thread(qapp) -> None:
    """As the app does: garbage (Qt objects of earlier tests) is collected on the GUI thread."""
    gc_on_gui_thread(qapp)


@pytest.fixture
def make_window(qtbot) -> Iterator:
    windows: list[MainWindow] = []

    def factory(persist_layout: bool = True) -> MainWindow:
        window = MainWindow(persist_layout=persist_layout)
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        return window

    yield factory
    for window in windows:
        jobs = list(window.jobs.jobs)
        window.close()
        for job in jobs:
            assert job.process.state() == QProcess.ProcessState.NotRunning, (
                f"worker of {job.title} outlived its window"
            )


def export_sample(
    qtbot, window: MainWindow, sample: str, exporter: str, opset: int, out: Path
) -> ExportResult:
    """Fill the Export panel for a bundled sample, export, and return the job's result."""
    panel = window.export_panel
    panel.kind.setCurrentText("Bundled sample")
    panel.target.setText(sample)
    panel.exporter.setCurrentText(exporter)
    panel.opset.setValue(opset)
    panel.output.setText(str(out))
    with qtbot.waitSignal(panel.sig_finished, timeout=120_000) as finished:
        panel.export_button.click()
    result: ExportResult = finished.args[0]
    return result


def wait_opened(qtbot, window: MainWindow, path) -> None:
    with qtbot.waitSignal(window.document.sig_opened, timeout=JOB_TIMEOUT_MS):
        window.open_path(path)
