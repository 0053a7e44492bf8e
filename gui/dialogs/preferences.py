"""Preferences: the worker interpreter, here or on a remote host over SSH, checked by a real
handshake before it is saved."""

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

from deploylens.core.environment import Environment
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
        self.host_edit = QLineEdit(self.settings.remote_host)
        self.host_edit.setPlaceholderText("none: workers run on this machine")
        self.host_edit.setToolTip(
            "user@server[:port] or an ~/.ssh/config alias. DeployLens uses your SSH keys/agent "
            "and known_hosts; an unknown host key is refused (ssh there once to accept it)."
        )
        self.remote_python_edit = QLineEdit(self.settings.remote_python)
        self.remote_python_edit.setPlaceholderText("python3")
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
        remote = QHBoxLayout()
        remote.addWidget(QLabel("Remote host"))
        remote.addWidget(self.host_edit, 2)
        remote.addWidget(QLabel("its Python"))
        remote.addWidget(self.remote_python_edit, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Worker interpreter</b>"))
        layout.addLayout(row)
        layout.addWidget(
            QLabel("<b>Remote GPU host</b> (optional: every job's worker runs there over SSH)")
        )
        layout.addLayout(remote)
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
        """Start a worker in the chosen interpreter (on the chosen host); show its handshake."""
        python = self.python_edit.text().strip() or None
        host = self.host_edit.text().strip()
        if host:
            from deploylens.core.worker.remote import Host

            try:
                Host.parse(host)
            except ValueError as exc:
                self.status.setText(f"Not usable: {exc}")
                return
        remote_python = self.remote_python_edit.text().strip() or "python3"
        where = f"{remote_python} on {host}" if host else (python or sys.executable)
        self.status.setText(f"Checking {where} …")
        self.table.setRowCount(0)
        self.job = self.manager.submit(
            "env.probe", {}, "Check interpreter", python=python, remote=host,
            remote_python=remote_python,
        )  # fmt: skip
        self.job.sig_finished.connect(self._on_report)
        self.job.sig_failed.connect(self._on_failed)

    def _on_report(self, report: Environment) -> None:
        python = report.python
        where = f" on {python.host}" if self.host_edit.text().strip() else ""
        self.status.setText(f"OK: Python {python.version} at {python.executable}{where}")
        self.table.show_report(report)

    def _on_failed(self, failure: JobFailure) -> None:
        self.status.setText(f"Not usable: {failure.message} {failure.hint}".strip())

    def save(self) -> bool:
        """Save what passes the host's own check; a malformed host is said and never saved
        (it used to be, and then every job failed — opening a local model included)."""
        host = self.host_edit.text().strip()
        if host:
            from deploylens.core.worker.remote import Host

            try:
                Host.parse(host)
            except ValueError as exc:
                self.status.setText(f"Not saved: {exc}.")
                self.host_edit.setFocus()
                return False
        self.settings.worker_python = self.python_edit.text().strip()
        self.settings.remote_host = host
        self.settings.remote_python = self.remote_python_edit.text().strip() or "python3"
        self.settings.save()
        self.accept()
        return True
