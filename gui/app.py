"""``deploylens`` with no command: the main window (entry point ``deploylens.frontends:gui``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deploylens.gui.common.qt_app import application, require_display

if TYPE_CHECKING:
    from deploylens.gui.main_window import MainWindow
    from deploylens.gui.model_document import ModelDocument

# bench/startup.py and bench/package.py time process start → window painted: with this set, the
# app writes "shown" and leaves once the event loop has painted the window the first time.
EXIT_WHEN_SHOWN = "DEPLOYLENS_EXIT_WHEN_SHOWN"


def main(argv: list[str], on_window: Callable[[MainWindow], Any] | None = None) -> int:
    """The window, on ``argv[0]`` if given. ``on_window`` (bench/startup.py) sees the window
    before its event loop starts."""
    require_display()
    app = application()
    document = open_early(argv[0]) if argv else None
    # the panels' modules (~0.4 s) are imported while the worker reads and checks the model
    from deploylens.gui.main_window import MainWindow
    from deploylens.gui.notifications import install_excepthook

    window = MainWindow(document=document)
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


def open_early(path: str) -> ModelDocument | None:
    """An ONNX model named on the command line starts opening before the window's modules are
    imported: its worker reads and checks it meanwhile (a 100k-node model's summary came ~0.4 s
    after the window, now beside it). Anything else (a project, a trace, an engine's JSON, a
    file that is not there) is opened by the window, which says what is wrong with it."""
    from deploylens.core.errors import UserError
    from deploylens.core.file_kind import ONNX, file_kind

    try:
        if file_kind(path) != ONNX:
            return None
    except (UserError, OSError):
        return None
    from deploylens.gui.job_manager import JobManager
    from deploylens.gui.model_document import ModelDocument

    document = ModelDocument(JobManager())
    document.open(path)
    if document.job is not None:
        document.job.flush()  # no event loop runs until the window is made
    return document
