"""``deploylens`` with no command: the main window (entry point ``deploylens.frontends:gui``)."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deploylens.core.blas import one_blas_thread
from deploylens.gui.common.qt_app import application, require_display

if TYPE_CHECKING:
    from deploylens.gui.job_manager import JobManager
    from deploylens.gui.main_window import MainWindow
    from deploylens.gui.worker_client import WorkerJob

# bench/startup.py and bench/package.py time process start → window painted: with this set, the
# app writes "shown" and leaves once the event loop has painted the window the first time.
EXIT_WHEN_SHOWN = "DEPLOYLENS_EXIT_WHEN_SHOWN"


def main(argv: list[str], on_window: Callable[[MainWindow], Any] | None = None) -> int:
    """The window, on ``argv[0]`` if given. ``on_window`` (bench/startup.py) sees the window
    before its event loop starts."""
    one_blas_thread(os.environ)  # before the panels import numpy (core/blas.py: ~0.1 s of CPU)
    require_display()
    app = application()  # first: a QProcess made before it never hears from its process
    early = open_early(argv[0]) if argv else None
    # the panels' modules (~0.3 s) are imported while the worker reads and checks the model
    from deploylens.gui.main_window import MainWindow
    from deploylens.gui.model_document import ModelDocument
    from deploylens.gui.notifications import install_excepthook

    document = None
    if early is not None:
        manager, job = early
        document = ModelDocument(manager)
        document.adopt(argv[0], job)
    window = MainWindow(document=document)
    # what the imports and the window made lives as long as the app: out of the collector's
    # walks (its first walk of them took 0.04–0.08 s in the middle of the first model's open)
    gc.freeze()
    install_excepthook(window.notifier)
    window.show()
    if argv and document is None:
        window.open_path(argv[0])
    if on_window is not None:
        on_window(window)
    if os.environ.get(EXIT_WHEN_SHOWN):
        from PySide6.QtCore import QTimer

        def shown() -> None:
            sys.stdout.write("shown\n")
            sys.stdout.flush()
            os._exit(0)

        QTimer.singleShot(0, shown)
    return app.exec()


def open_early(path: str) -> tuple[JobManager, WorkerJob] | None:
    """The inspect job of an ONNX model named on the command line, started as soon as the Qt
    application exists and before the window's modules are imported: its worker reads and
    checks the model meanwhile (a 100k-node model's summary came ~0.4 s after the window, now
    beside it). Anything else (a
    project, a trace, an engine's JSON, a file that is not there): ``None``, and the window
    opens it and says what is wrong with it."""
    from deploylens.core.errors import UserError
    from deploylens.core.file_kind import ONNX, file_kind

    try:
        if file_kind(path) != ONNX:
            return None
    except (UserError, OSError):
        return None
    from deploylens.core.model.request import inspect_request
    from deploylens.gui.job_manager import JobManager

    manager = JobManager()
    job = manager.submit_request(*inspect_request(Path(path).resolve()))
    job.flush()  # no event loop runs until the window is made
    return manager, job
