"""Details of a bug or a crash: message, traceback or stderr tail, and "Copy diagnostics"."""

from __future__ import annotations

import platform

from PySide6 import __version__ as pyside_version
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from deploylens.core import __version__


def diagnostics_text(title: str, message: str, details: str) -> str:
    return "\n".join(
        [
            f"DeployLens {__version__} — {title}",
            f"Python {platform.python_version()} on {platform.platform()}; "
            f"PySide6 {pyside_version}",
            "",
            message,
            "",
            details,
        ]
    )


class ErrorDetailsDialog(QDialog):
    """Non-modal: the app keeps working while it is open."""

    def __init__(self, title: str, message: str, details: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(760, 480)
        self.diagnostics = diagnostics_text(title, message, details)
        label = QLabel(message)
        label.setWordWrap(True)
        text = QPlainTextEdit(details or "(no further details)")
        text.setReadOnly(True)
        copy = QPushButton("Copy diagnostics")
        copy.clicked.connect(self.copy_diagnostics)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(text)
        layout.addWidget(buttons)

    def copy_diagnostics(self) -> None:
        QGuiApplication.clipboard().setText(self.diagnostics)
