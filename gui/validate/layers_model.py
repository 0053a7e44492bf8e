"""The per-node comparison table as a sortable Qt model (numbers sort as numbers)."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from deploylens.core.validate.records import LayerResult
from deploylens.core.validate.result import within_text

Index = QModelIndex | QPersistentModelIndex
COLUMNS = (
    ("#", "index"),
    ("ONNX node", "node"),
    ("Op", "op_type"),
    ("Module", "module"),
    ("Max abs", "max_abs"),
    ("Rel L2", "rel_l2"),
    ("Jump", "jump"),
    ("Cosine", "cosine"),
    ("Within", "within"),
    ("Pass", "passed"),
)
FAIL_COLOR, FIRST_COLOR = QColor("#ffcdd2"), QColor("#ff8a80")
SORT_ROLE = Qt.ItemDataRole.UserRole
NODE_ROLE = Qt.ItemDataRole.UserRole + 1


class LayersTableModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[LayerResult] = []
        self.first_node = ""

    def set_layers(self, layers: list[LayerResult], first_node: str = "") -> None:
        self.beginResetModel()
        self.rows = layers
        self.first_node = first_node
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        key = COLUMNS[index.column()][1]
        value = getattr(row, key)  # a column is a LayerResult field
        if role == Qt.ItemDataRole.DisplayRole:
            return _text(key, value)
        if role == SORT_ROLE:
            if isinstance(value, float) and math.isnan(value):
                return -math.inf
            return value if isinstance(value, int | float) else str(value)
        if role == NODE_ROLE:
            return row.node
        if role == Qt.ItemDataRole.BackgroundRole:
            if row.node == self.first_node:
                return FIRST_COLOR
            return None if row.passed else FAIL_COLOR
        if role == Qt.ItemDataRole.ToolTipRole:
            parts = [f"tensor {row.tensor}", row.note, row.reason]
            return "\n".join(p for p in parts if p)
        return None


def _text(key: str, value: Any) -> str:
    if key == "passed":
        return "✓" if value else "✗"
    if key == "within":
        return within_text(value)
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.3g}"
    return str(value)
