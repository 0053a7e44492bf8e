"""One error pipeline for the GUI: user errors as a banner, bugs and crashes as a details dialog.

Also installs ``sys.excepthook`` so a bug in a slot shows a dialog instead of killing the app.
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from deploylens.core.errors import UserError
from deploylens.core.worker.client import JobFailure
from deploylens.gui.dialogs.error_details import ErrorDetailsDialog


class NotificationBar(QWidget):
    """A dismissable banner at the top of the window for messages the user can act on, with an
    action button when there is one thing to do (choose another worker interpreter …)."""

    sig_visible = Signal(bool)
    sig_choose_interpreter = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.action = QToolButton()
        self.action.setText("Use the Python of my training environment…")
        self.action.setToolTip("Preferences → Worker interpreter: one that has the module")
        self.action.clicked.connect(self.sig_choose_interpreter)
        self.action.hide()
        close = QToolButton()
        close.setText("✕")
        close.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action)
        layout.addWidget(close)
        self.setStyleSheet("NotificationBar { background: #fdecea; } QLabel { color: #5f2120; }")

    def show_message(self, text: str, offer_interpreter: bool = False) -> None:
        """Show ``text``; the window shows or hides the bar's container on ``sig_visible``."""
        self.label.setText(text)
        self.action.setVisible(offer_interpreter)
        self.sig_visible.emit(True)

    def dismiss(self) -> None:
        self.sig_visible.emit(False)


class Notifier(QObject):
    """Routes failures to the right surface; keeps open dialogs alive."""

    sig_notified = Signal(str, str)  # kind, message

    def __init__(self, bar: NotificationBar, parent_widget: QWidget) -> None:
        super().__init__(parent_widget)
        self.bar = bar
        self.parent_widget = parent_widget
        self.dialogs: list[ErrorDetailsDialog] = []

    def user_message(self, message: str, hint: str = "", offer_interpreter: bool = False) -> None:
        self.bar.show_message(message + (f"\n{hint}" if hint else ""), offer_interpreter)
        self.sig_notified.emit("user", message)

    def failure(self, failure: JobFailure, what: str = "") -> None:
        prefix = f"{what}: " if what else ""
        if failure.kind == "cancelled":
            self.sig_notified.emit("cancelled", prefix + "cancelled")
            return
        if failure.is_user_facing:
            # a missing module (torch, TensorRT: never in the packaged bundle) is one choice away
            self.user_message(
                prefix + failure.message,
                failure.hint,
                offer_interpreter=failure.kind == "missing_dependency",
            )
            return
        details = "\n\n".join(
            part
            for part in (
                failure.hint,
                failure.traceback,
                "Last lines of the worker's error output:\n" + failure.stderr_tail
                if failure.stderr_tail
                else "",
            )
            if part
        )
        self.bug(f"{prefix}{failure.message}", details, title=f"Job failed ({failure.kind})")

    def bug(self, message: str, details: str, title: str = "Unexpected error") -> None:
        self.bar.show_message(message + "  (details in the dialog)")
        dialog = ErrorDetailsDialog(title, message, details, self.parent_widget)
        self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
        dialog.show()
        self.sig_notified.emit("bug", message)

    def exception(
        self, kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if isinstance(value, UserError):
            self.user_message(value.message, value.hint)
            return
        details = "".join(traceback.format_exception(kind, value, tb))
        self.bug(f"{kind.__name__}: {value}", details)


def install_excepthook(notifier: Notifier) -> None:
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, value, tb)
            return
        try:
            notifier.exception(kind, value, tb)
        except Exception:  # never let the hook itself crash the app
            previous(kind, value, tb)

    sys.excepthook = hook
