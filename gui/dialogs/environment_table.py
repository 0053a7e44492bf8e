"""A table of what an interpreter has, with the pip line for each missing package."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from deploylens.core.worker.probe import pip_install_line

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

    def show_report(self, report: dict[str, Any]) -> None:
        """Fill from a handshake or an ``env.probe`` payload."""
        python = report["python"]
        self.add_row("Python", python["version"], python.get("executable", ""), "")
        for name, info in report["packages"].items():
            if name == "deploylens":
                kind = "packaged bundle" if info.get("frozen") else "Python package"
                self.add_row("DeployLens", info.get("version") or "?", kind, "")
                continue
            if name == "cuda_driver":
                if info.get("available"):
                    version = f"driver {info['driver_version']}: {', '.join(info['devices'])}"
                else:
                    version = f"none — {info.get('reason', '')}"
                self.add_row("CUDA", version, "GPU profiling and TensorRT", "")
                continue
            version = info.get("version")
            providers = info.get("providers")
            if version and providers:
                version = f"{version} ({', '.join(providers)})"
            how = "" if version else pip_install_line(name, python.get("executable"))
            self.add_row(name, version or "missing", info.get("purpose", ""), how)
        torch = report.get("torch")
        if torch:
            detail = torch.get("error") or (
                f"CUDA build {torch.get('cuda_build')}, available: {torch.get('cuda_available')}"
            )
            self.add_row("torch (imported)", torch.get("version", "?"), detail, "")
        self.resizeColumnsToContents()
