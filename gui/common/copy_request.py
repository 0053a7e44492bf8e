""" "Copy as…": the CLI line and the Python script of the request a panel would submit — the
same text ``deploylens`` prints for it, because both come from the request object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu, QPushButton, QWidget

from deploylens.core.errors import UserError


class CopyRequestButton(QPushButton):
    """A button with "CLI line" and "Python script"; ``request()`` builds the panel's request
    (a ``UserError`` there is reported through ``sig_message``, nothing is copied)."""

    sig_message = Signal(str)
    sig_copied = Signal(str)  # the text put on the clipboard

    def __init__(self, request: Callable[[], Any], parent: QWidget | None = None) -> None:
        super().__init__("Copy as…", parent)
        self._request = request
        menu = QMenu(self)
        menu.addAction("CLI line", lambda: self.copy("cli"))
        menu.addAction("Python script", lambda: self.copy("script"))
        self.setMenu(menu)
        self.setToolTip("the deploylens command or the Python script that does the same job")

    def text_of(self, what: str) -> str:
        request = self._request()
        return request.cli_line() if what == "cli" else request.python_script()

    def copy(self, what: str) -> None:
        try:
            text = self.text_of(what)
        except UserError as exc:
            self.sig_message.emit(exc.message)
            return
        QGuiApplication.clipboard().setText(text)
        self.sig_copied.emit(text)
