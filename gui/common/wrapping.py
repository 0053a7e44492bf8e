"""Rows that grow with a wrapped sentence: Qt's item views paint wrapped text but size a row as
one line (the delegate's size hint does not know its column's width), so a long finding was cut
at the panel's edge. This delegate measures the text at the column's width."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QTreeView

PADDING = 6


class WrappingDelegate(QStyledItemDelegate):
    def __init__(self, view: QTreeView) -> None:
        super().__init__(view)
        self.view = view
        view.setWordWrap(True)
        view.setUniformRowHeights(False)
        view.header().sectionResized.connect(lambda *_: view.scheduleDelayedItemsLayout())

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        hint = super().sizeHint(option, index)
        text = index.data(Qt.ItemDataRole.DisplayRole)
        if not isinstance(text, str) or not text:
            return hint
        width = self.view.columnWidth(index.column())
        if index.column() == 0:  # the tree's indentation and branch take part of column 0
            depth, parent = 0, index.parent()
            while parent.isValid():
                depth, parent = depth + 1, parent.parent()
            width -= self.view.indentation() * (depth + 1)
        width = max(width - PADDING, 20)
        flags = int(Qt.TextFlag.TextWordWrap)
        bounds = option.fontMetrics.boundingRect(QRect(0, 0, width, 100_000), flags, text)
        return QSize(hint.width(), max(hint.height(), bounds.height() + PADDING))
