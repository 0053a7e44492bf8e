"""Help → Environment: versions of everything found, what is missing and the line to get it."""

from __future__ import annotations

from importlib.metadata import version as dist_version

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

from deploylens.core import __version__
from deploylens.core.environment import Environment
from deploylens.core.worker.client import JobFailure
from deploylens.gui.dialogs.environment_table import EnvironmentTable
from deploylens.gui.job_manager import JobManager


class EnvironmentDialog(QDialog):
    """Asks the worker (deep probe, torch included) without blocking the window."""

    def __init__(self, manager: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Environment")
        self.resize(900, 460)
        self.status = QLabel("Asking the worker interpreter …")
        self.gui_table = EnvironmentTable()
        for name, version, purpose in (
            ("DeployLens", __version__, "this app"),
            ("PySide6", pyside_version, f"the GUI (Qt {qVersion()})"),
            # Version from metadata: importing pyqtgraph here would cost ~200 ms.
            ("pyqtgraph", dist_version("pyqtgraph"), "plots and timelines"),
        ):
            self.gui_table.add_row(name, version, purpose)
        self.gui_table.resizeColumnsToContents()
        self.worker_table = EnvironmentTable()
        copy = QPushButton("Copy")
        copy.clicked.connect(self.copy)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>App process</b>"))
        layout.addWidget(self.gui_table, 1)
        from deploylens.core.settings import AppSettings

        self.host = AppSettings.load().remote_host
        where = f" on {self.host} (over SSH)" if self.host else ""
        layout.addWidget(
            QLabel(f"<b>Worker interpreter</b>{where} (runs exports, ONNX Runtime, builds)")
        )
        layout.addWidget(self.status)
        layout.addWidget(self.worker_table, 3)
        layout.addWidget(buttons)
        self.job = manager.submit("env.probe", {"torch": True}, title="Environment probe")
        self.job.sig_finished.connect(self._on_report)
        self.job.sig_failed.connect(self._on_failed)

    def _on_report(self, report: Environment) -> None:
        python = report.python
        where = f" on {self.host} (machine {python.host or '?'})" if self.host else ""
        self.status.setText(f"Interpreter: {python.executable}{where}")
        self.worker_table.show_report(report)

    def _on_failed(self, failure: JobFailure) -> None:
        self.status.setText(f"The worker could not be asked: {failure}")

    def text(self) -> str:
        lines = [self.status.text()]
        for table in (self.gui_table, self.worker_table):
            for row in range(table.rowCount()):
                cells = [table.item(row, c).text() for c in range(table.columnCount())]
                lines.append("\t".join(cells).rstrip())
        return "\n".join(lines)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
