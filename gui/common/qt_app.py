"""The QApplication and the display checks, for the app, the screenshot and the headless graph
renderer alike (a renderer importing the app would import every panel)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtWidgets import QApplication

from deploylens.core import __version__
from deploylens.core.errors import UserError
from deploylens.gui.common import pyside_scan

pyside_scan.install()  # before the window's ~300 modules are imported (gui/common/pyside_scan.py)


def gc_on_gui_thread(app: QApplication) -> None:
    """Python's cyclic GC runs in whichever thread allocates when a threshold trips: on a
    background thread (trace import, support matrix) it can destroy Qt objects there and
    deadlock against the GUI thread (seen in CI: QObject::connectImpl waiting on a mutex while a
    loader thread waited for the GIL). Collect on a GUI-thread timer instead, once per app."""
    if getattr(app, "_deploylens_gc", None) is None:
        app._deploylens_gc = GuiThreadCollector(500)  # type: ignore[attr-defined]


@contextmanager
def collections_paused() -> Iterator[None]:
    """Around a build that makes millions of short-lived objects and frees them by reference
    counts (a 100k-node graph's IR): the GUI-thread collector waits for its end instead of
    walking them half-way (0.08–0.1 s of the 100k-node model's open)."""
    collector = getattr(QApplication.instance(), "_deploylens_gc", None)
    if collector is None:
        yield
        return
    with collector.lock:
        collector.paused += 1
    try:
        yield
    finally:
        with collector.lock:
            collector.paused -= 1


class GuiThreadCollector:
    """Automatic collection off; every ``interval_ms`` on the GUI thread, each generation whose
    count passed the threshold Python would have used is collected (youngest first, an older
    one only with the younger). Ours, not pyqtgraph's: importing pyqtgraph costs 0.2–0.3 s of
    the window's start."""

    def __init__(self, interval_ms: int) -> None:
        import gc

        from PySide6.QtCore import QTimer

        self.threshold = gc.get_threshold()
        self.paused = 0  # builds running now (``collections_paused``)
        self.lock = threading.Lock()
        gc.disable()
        self.timer = QTimer()
        self.timer.timeout.connect(self.check)
        self.timer.start(interval_ms)

    def check(self) -> None:
        import gc

        if self.paused:
            return
        for generation, (count, limit) in enumerate(
            zip(gc.get_count(), self.threshold, strict=False)
        ):
            if count <= limit:
                return
            gc.collect(generation)


def application() -> QApplication:
    app = QApplication.instance()
    if app is None:
        app = QApplication([sys.argv[0] if sys.argv else "deploylens"])
    gc_on_gui_thread(app)  # type: ignore[arg-type]
    app.setApplicationName("DeployLens")
    app.setOrganizationName("DeployLens")
    app.setApplicationVersion(__version__)
    return app  # type: ignore[return-value]


def ensure_platform() -> None:
    """Fall back to offscreen rendering when there is no display at all."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def require_display() -> None:
    """Qt aborts the process when it cannot reach a display: say so in a sentence instead."""
    if (
        sys.platform.startswith("linux")
        and not os.environ.get("QT_QPA_PLATFORM")
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    ):
        raise UserError(
            "No display found for the GUI (neither DISPLAY nor WAYLAND_DISPLAY is set).",
            "Run it in a desktop session, use the CLI (deploylens inspect / deploylens demo), "
            "or set QT_QPA_PLATFORM=offscreen.",
        )
