"""Preferences: the worker interpreter, checked by a real handshake before it is saved."""

from __future__ import annotations

import sys
from typing import Any

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.settings import AppSettings
from deploylens.core.worker.client import JobFailure
from deploylens.gui.dialogs.environment_table import EnvironmentTable
from deploylens.gui.job_manager import JobManager


class PreferencesDialog(QDialog):
    def __init__(self, manager: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.resize(820, 420)
        self.manager = manager
        self.settings = AppSettings.load()
        self.python_edit = QLineEdit(self.settings.worker_python)
        self.python_edit.setPlaceholderText(f"this app's own interpreter ({sys.executable})")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.check_button = QPushButton("Check")
        self.check_button.clicked.connect(self.check)
        row = QHBoxLayout()
        row.addWidget(self.python_edit, 1)
        row.addWidget(browse)
        row.addWidget(self.check_button)
        self.status = QLabel(
            "The worker runs exports, ONNX Runtime and builds. Pick your training env's Python "
            "to export with its torch and model code."
        )
        self.status.setWordWrap(True)
        self.table = EnvironmentTable()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Worker interpreter</b>"))
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.buttons)
        self.job: Any = None

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Python interpreter")
        if path:
            self.python_edit.setText(path)
            self.check()

    def check(self) -> None:
        """Start a worker in the chosen interpreter; show what its handshake says."""
        python = self.python_edit.text().strip() or None
        self.status.setText(f"Checking {python or sys.executable} …")
        self.table.setRowCount(0)
        self.job = self.manager.submit("env.probe", {}, "Check interpreter", python=python)
        self.job.sig_finished.connect(self._on_report)
        self.job.sig_failed.connect(self._on_failed)

    def _on_report(self, report: dict[str, Any]) -> None:
        self.status.setText(
            f"OK: Python {report['python']['version']} at {report['python']['executable']}"
        )
        self.table.show_report(report)

    def _on_failed(self, failure: JobFailure) -> None:
        self.status.setText(f"Not usable: {failure.message} {failure.hint}".strip())

    def save(self) -> None:
        self.settings.worker_python = self.python_edit.text().strip()
        self.settings.save()
        self.accept()
