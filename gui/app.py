"""``deploylens`` with no command: the main window (entry point ``deploylens.frontends:gui``)."""

from __future__ import annotations

import os
import sys

from deploylens.gui.common.qt_app import application, require_display
from deploylens.gui.main_window import MainWindow
from deploylens.gui.notifications import install_excepthook

# bench/startup.py and bench/package.py time process start → window painted: with this set, the
# app writes "shown" and leaves once the event loop has painted the window the first time.
EXIT_WHEN_SHOWN = "DEPLOYLENS_EXIT_WHEN_SHOWN"


def main(argv: list[str]) -> int:
    require_display()
    app = application()
    window = MainWindow()
    install_excepthook(window.notifier)
    window.show()
    if argv:
        window.open_path(argv[0])
    if os.environ.get(EXIT_WHEN_SHOWN):
        from PySide6.QtCore import QTimer

        def shown() -> None:
            sys.stdout.write("shown\n")
            sys.stdout.flush()
            os._exit(0)

        QTimer.singleShot(0, shown)
    return app.exec()
