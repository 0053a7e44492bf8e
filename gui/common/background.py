"""Run a function on a Python thread and hand its result back on the GUI thread."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal


class BackgroundTask(QObject):
    """One computation off the UI thread; signals arrive queued on the GUI thread."""

    sig_done = Signal(object)
    sig_failed = Signal(object, str)  # exception, traceback text
    sig_partial = Signal(object)  # something to show before the end (a trace read so far)

    def __init__(self, function: Callable[[], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._function = function
        self.worker = threading.Thread(target=self._run, name="deploylens-graph", daemon=True)

    def start(self) -> BackgroundTask:
        self.worker.start()
        return self

    def _run(self) -> None:
        try:
            result = self._function()
        except Exception as exc:  # reported to the GUI, never lost
            self._emit(self.sig_failed, exc, traceback.format_exc())
            return
        self._emit(self.sig_done, result)

    def partial(self, value: Any) -> None:
        """From the worker thread: hand ``value`` to the GUI thread now (queued)."""
        self._emit(self.sig_partial, value)

    @staticmethod
    def _emit(signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the receiver was deleted meanwhile (a closed panel, app exit)
            pass
