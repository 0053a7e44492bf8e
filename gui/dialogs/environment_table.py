"""A table of what an interpreter has, with the pip line for each missing package."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from deploylens.core.environment import Environment

HEADERS = ("Package", "Version", "Used for", "How to get it")


class EnvironmentTable(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(HEADERS), parent)
        self.setHorizontalHeaderLabels(HEADERS)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setStretchLastSection(True)

    def add_row(self, name: str, version: str, purpose: str, how: str = "") -> None:
        row = self.rowCount()
        self.insertRow(row)
        for column, text in enumerate((name, version, purpose, how)):
            self.setItem(row, column, QTableWidgetItem(text))

    def show_report(self, found: Environment) -> None:
        """Fill from an ``env.probe`` answer."""
        python = found.python
        self.add_row("Python", python.version, python.executable, "")
        self.add_row("DeployLens", found.deploylens.version or "?", found.deploylens.kind(), "")
        self.add_row("CUDA", found.cuda_driver.text(), "GPU profiling and TensorRT", "")
        for name, info in found.packages.items():
            how = "" if info.version else found.install_line(name)
            self.add_row(name, found.package_text(name), info.purpose, how)
        if found.torch is not None:
            self.add_row("torch (imported)", found.torch.version or "?", found.torch.text(), "")
        self.resizeColumnsToContents()
