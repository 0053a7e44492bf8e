"""Render the main window with a model open to a PNG, headless when there is no display.

Entry point ``deploylens.frontends:screenshot``; ``deploylens demo`` uses it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer

from deploylens.core.errors import UserError
from deploylens.gui.app import application, ensure_platform

TIMEOUT_MS = 60_000


def render_main_window(
    model: str | Path, png: str | Path, size: tuple[int, int] = (1400, 860)
) -> Path:
    ensure_platform()
    with tempfile.TemporaryDirectory(prefix="deploylens-shot-") as scratch:
        # A scratch config: a demo must not touch the user's window layout or recent files.
        previous = os.environ.get("DEPLOYLENS_CONFIG_DIR")
        os.environ["DEPLOYLENS_CONFIG_DIR"] = scratch
        try:
            return _render(Path(model), Path(png), size)
        finally:
            if previous is None:
                os.environ.pop("DEPLOYLENS_CONFIG_DIR", None)
            else:
                os.environ["DEPLOYLENS_CONFIG_DIR"] = previous


def _render(model: Path, png: Path, size: tuple[int, int]) -> Path:
    from deploylens.gui.main_window import MainWindow

    application()
    window = MainWindow(persist_layout=False)
    window.resize(*size)
    window.show()
    loop = QEventLoop()
    outcome: dict[str, object] = {}
    window.document.sig_opened.connect(lambda s: (outcome.setdefault("ok", s), loop.quit()))
    window.document.sig_failed.connect(lambda f: (outcome.setdefault("failed", f), loop.quit()))
    QTimer.singleShot(TIMEOUT_MS, loop.quit)
    window.open_path(model)
    loop.exec()
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
