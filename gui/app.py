"""``deploylens`` with no command: the main window (entry point ``deploylens.frontends:gui``)."""

from __future__ import annotations

from deploylens.gui.common.qt_app import application, require_display
from deploylens.gui.main_window import MainWindow
from deploylens.gui.notifications import install_excepthook


def main(argv: list[str]) -> int:
    require_display()
    app = application()
    window = MainWindow()
    install_excepthook(window.notifier)
    window.show()
    if argv:
        window.open_path(argv[0])
    return app.exec()
