"""The overlay legend, in the side column beside the canvas (never over the nodes)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from deploylens.core.graph.overlay import Overlay


class Legend(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setStyleSheet(
            "QLabel { background: rgba(255,255,255,225); border: 1px solid #c5ccd3; padding: 4px; }"
        )
        self.entries: list[tuple[str, tuple[int, int, int]]] = []
        self.hide()

    def show_overlay(self, overlay: Overlay | None) -> None:
        if overlay is None:
            self.entries = []
            self.hide()
            return
        self.entries = overlay.legend_entries()
        rows = "".join(
            f"<tr><td style='background: rgb{rgb}; width: 14px'>&nbsp;</td><td>{label}</td></tr>"
            for label, rgb in self.entries
        )
        self.setText(f"<b>{overlay.legend or overlay.name}</b><table>{rows}</table>")
        self.show()
