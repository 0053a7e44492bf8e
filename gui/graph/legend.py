"""The overlay legend, in the side column beside the canvas (never over the nodes)."""

from __future__ import annotations

import html

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

    def show_overlay(
        self,
        overlay: Overlay | None,
        scale: tuple[float, float] | None = None,
        groups_shown: bool = False,
    ) -> None:
        """List the overlay's colours on ``scale``, the one the canvas paints with (nodes and
        collapsed groups together), and say how a collapsed group got its colour."""
        if overlay is None:
            self.entries = []
            self.hide()
            return
        self.entries = overlay.legend_entries(value_range=scale)
        rows = "".join(
            f"<tr><td style='background: rgb{rgb}; width: 14px'>&nbsp;</td>"
            f"<td>{html.escape(label)}</td></tr>"
            for label, rgb in self.entries
        )
        caption = ""
        if groups_shown:
            how = (
                "bar of their nodes' categories"
                if overlay.categorical
                else f"{overlay.aggregate} of their nodes"
            )
            caption = f"<br><i>collapsed groups: {how}</i>"
        title = html.escape(overlay.legend or overlay.name)
        self.setText(f"<b>{title}</b><table>{rows}</table>{caption}")
        self.show()
