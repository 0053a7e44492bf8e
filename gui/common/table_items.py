"""Table cells shared by the panels' tables."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem


class NumberItem(QTableWidgetItem):
    """Sorts by number, blanks last."""

    def __init__(self, value: float | None, digits: int = 3) -> None:
        super().__init__("" if value is None else f"{value:.{digits}f}")
        self.value = float("inf") if value is None else value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        return self.value < getattr(other, "value", float("inf"))
