"""Table cells shared by the panels' tables."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem


class NumberItem(QTableWidgetItem):
    """Sorts by number, blanks last."""

    def __init__(self, value: float | None, digits: int = 3, text: str | None = None) -> None:
        """``text``: what the cell shows when it is not the number itself (a unit, separators);
        it still sorts by ``value``."""
        shown = text if text is not None else "" if value is None else f"{value:.{digits}f}"
        super().__init__(shown)
        self.value = float("inf") if value is None else value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        return self.value < getattr(other, "value", float("inf"))
