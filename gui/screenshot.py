"""Render the main window with a model open to a PNG, headless when there is no display.

Entry point ``deploylens.frontends:screenshot``; ``deploylens demo`` uses it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer

from deploylens.core.errors import UserError
from deploylens.gui.common.qt_app import application, ensure_platform

TIMEOUT_MS = 60_000


def _wait(done: Callable[[], bool], timeout_ms: int = TIMEOUT_MS) -> None:
    deadline = time.monotonic() + timeout_ms / 1000
    while not done() and time.monotonic() < deadline:
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.01)


def render_main_window(
    model: str | Path, png: str | Path, size: tuple[int, int] = (1400, 860), expand: int = 2
) -> Path:
    ensure_platform()
    with tempfile.TemporaryDirectory(prefix="deploylens-shot-") as scratch:
        # A scratch config: a demo must not touch the user's window layout or recent files.
        previous = os.environ.get("DEPLOYLENS_CONFIG_DIR")
        os.environ["DEPLOYLENS_CONFIG_DIR"] = scratch
        try:
            return _render(Path(model), Path(png), size, expand)
        finally:
            if previous is None:
                os.environ.pop("DEPLOYLENS_CONFIG_DIR", None)
            else:
                os.environ["DEPLOYLENS_CONFIG_DIR"] = previous


def _render(model: Path, png: Path, size: tuple[int, int], expand: int) -> Path:
    from deploylens.gui.main_window import MainWindow

    application()
    window = MainWindow(persist_layout=False)
    window.resize(*size)
    window.show()
    outcome: dict[str, object] = {}
    window.document.sig_opened.connect(lambda summary: outcome.setdefault("ok", summary))
    window.graph_panel.sig_loaded.connect(lambda graph: outcome.setdefault("graph", graph))
    window.graph_panel.sig_failed.connect(lambda message: outcome.setdefault("failed", message))
    window.document.sig_failed.connect(lambda failure: outcome.setdefault("failed", failure))
    window.open_path(model)
    # done when the summary (worker) and the graph (background layout) are both there
    _wait(lambda: "failed" in outcome or ("ok" in outcome and "graph" in outcome))
    if "graph" in outcome:
        window.graph_panel.expand_to_depth(expand)
        window.graph_panel.canvas.fit()
    # the jobs opening a model starts (shapes, support) finish first: a picture taken mid-job
    # showed their progress bars and half-filled panels (the shapes job, which brings the
    # checker's findings, starts only once the graph has painted)
    _wait(lambda: not window.jobs.active() and not window.document.checking)
    loop = QEventLoop()
    try:
        if "ok" not in outcome:
            reason = outcome.get("failed") or f"no answer within {TIMEOUT_MS / 1000:.0f} s"
            raise UserError(f"The main window could not open {model.name}: {reason}")
        QTimer.singleShot(200, loop.quit)  # let layouts settle before grabbing
        loop.exec()
        png.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(png), "PNG"):
            raise UserError(f"Could not write the screenshot to {png}.")
        return png
    finally:
        window.close()
        window.deleteLater()
