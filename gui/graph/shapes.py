"""The shown graph's inferred shapes — and, when the window opened the model, onnx's checker
findings — from one worker job started after the graph's first paint.

The open's own summary comes unchecked: the checker and strict shape inference (~0.6 s of CPU
on a 100k-node model) ran in the open's worker beside the GUI's layout, and the shapes job's
worker started as the graph was painted. Both now wait for that paint, and share one worker and
one parse (``ShapesRequest(check=True)``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from deploylens.core.graph.request import ShapesRequest
from deploylens.core.graph.result import ShapesResult
from deploylens.core.graph.scene import GraphScene
from deploylens.core.worker.client import JobFailure
from deploylens.core.worker.protocol import CANCELLED
from deploylens.gui.graph.canvas import GraphCanvas
from deploylens.gui.job_manager import JobManager

# A canvas that was visible when its graph was laid out but was hidden before it painted (a
# tab changed) still gets its shapes this long after the layout.
AFTER_PAINT_MS = 1000


class ShapesAfterPaint(QObject):
    """Owns the shapes job of the graph shown (one at a time: a new graph stops the last's)."""

    sig_checked = Signal(str, object)  # path, list[str]: the checker's findings (``check``)

    def __init__(
        self, jobs: JobManager, canvas: GraphCanvas, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.canvas = canvas
        self.check = False  # also the checker's findings (the window's open asks for them)
        self.job: Any = None  # the worker job, once started
        self.wanted: tuple[str, GraphScene | None] | None = None  # waiting for the paint

    def stop(self) -> None:
        """The graph is no longer shown: its job (seconds of inference on a large model) would
        take a core from the next open."""
        self.wanted = None
        if self.job is not None and self.job.active:
            self.job.cancel()
        self.job = None

    def follow(self, path: str, model: GraphScene | None) -> None:
        """Ask for ``path``'s shapes once the canvas has painted ``model`` (at once when the
        canvas is hidden). ``model`` None: its layout failed, and only the findings are wanted."""
        if model is None and not self.check:
            return
        self.stop()
        self.wanted = (path, model)
        if model is not None and self.canvas.isVisible():
            self.canvas.painted_once.append(self._start)
            QTimer.singleShot(AFTER_PAINT_MS, self._start)
        else:
            self._start()

    def _start(self) -> None:
        if self.wanted is None:  # started already, or stopped
            return
        path, model = self.wanted
        self.wanted = None
        job = self.jobs.submit_request(
            ShapesRequest(path, check=self.check), f"Shapes of {Path(path).name}"
        )
        job.on_finished(lambda found: self._done(path, model, found))
        if self.check:
            job.sig_failed.connect(lambda failure: self._failed(path, failure))
        self.job = job

    def _done(self, path: str, model: GraphScene | None, found: ShapesResult) -> None:
        if model is not None:
            known = model.ir.value_types
            known.update({**found.shapes(), **known})  # what the file itself says wins
            self.canvas.update()
        if found.findings is not None:
            self.sig_checked.emit(path, found.findings)

    def _failed(self, path: str, failure: JobFailure) -> None:
        if failure.kind != CANCELLED:  # a stopped job's model is no longer open
            self.sig_checked.emit(path, [f"onnx's checker did not finish: {failure.message}"])
