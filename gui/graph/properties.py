"""Properties of the selected node or group; initializer statistics on request."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.graph.details import Section, group_sections, node_sections, overlay_row
from deploylens.core.graph.ir import GraphIR
from deploylens.core.graph.overlay import Overlay
from deploylens.core.graph.result import TensorStatsResult
from deploylens.core.graph.scene import GraphScene
from deploylens.gui.common.columns import fit_columns

WRAP = Qt.TextFlag.TextWordWrap | Qt.TextFlag.TextWrapAnywhere  # as the style paints wrapped text


class WrappingRows(QStyledItemDelegate):
    """Row heights that hold each value wrapped to its column's width: a tree view sizes rows
    for one line and elided a long value ("float32 [64] weight (Identi…" at 1366×768)."""

    def __init__(self, view: QTreeView) -> None:
        super().__init__(view)
        self.view = view

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        size = super().sizeHint(option, index)
        text = index.data()
        style = self.view.style()
        margin = 2 * (style.pixelMetric(style.PixelMetric.PM_FocusFrameHMargin) + 1)
        width = self.view.columnWidth(index.column()) - margin  # what the style paints text in
        if index.column() and isinstance(text, str) and text and width > 0:
            needed = option.fontMetrics.boundingRect(QRect(0, 0, width, 0), WRAP, text)
            size.setHeight(max(size.height(), needed.height() + 4))
        return size


class PropertiesView(QWidget):
    sig_stats_requested = Signal(list)  # initializer names

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Property", "Value", "Detail"])
        self.tree.setAlternatingRowColors(True)
        self.tree.setWordWrap(True)
        self.tree.setItemDelegate(WrappingRows(self.tree))
        self.tree.setTextElideMode(Qt.TextElideMode.ElideNone)  # wrapped whole, never cut
        self.tree.header().sectionResized.connect(lambda *_: self.tree.scheduleDelayedItemsLayout())
        self.stats_button = QPushButton("Compute initializer statistics")
        self.stats_button.setEnabled(False)
        self.stats_button.clicked.connect(self._request_stats)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree)
        layout.addWidget(self.stats_button)
        self.initializers: list[str] = []
        self._rows: dict[str, QTreeWidgetItem] = {}

    def clear(self) -> None:
        self.tree.clear()
        self.initializers = []
        self._rows = {}
        self.stats_button.setEnabled(False)

    def show_sections(self, sections: list[Section]) -> None:
        self.clear()
        for section in sections:
            top = QTreeWidgetItem([section.title, str(len(section.rows))])
            self.tree.addTopLevelItem(top)
            for name, value, detail in section.rows:
                row = QTreeWidgetItem(top, [name, value, detail])
                row.setToolTip(1, value)
                if detail == "initializer":
                    self.initializers.append(name)
                    self._rows[name] = row
            top.setExpanded(True)
        self._fit_columns()
        self.stats_button.setEnabled(bool(self.initializers))

    def show_node(self, ir: GraphIR, node: int, overlay: Overlay | None = None) -> None:
        """The node's sections, and the value the overlay on screen paints it with (the figure
        behind the colour: latency, error, sensitivity)."""
        sections = node_sections(ir, node)
        if overlay is not None:
            sections.insert(0, Section("Overlay", [overlay_row(overlay, node)]))
        self.show_sections(sections)

    def show_group(self, model: GraphScene, group: int) -> None:
        self.show_sections(group_sections(model.ir, group, model.anc))

    def _request_stats(self) -> None:
        self.stats_button.setEnabled(False)
        self.stats_button.setText("Computing statistics in the worker …")
        self.sig_stats_requested.emit(list(self.initializers))

    def show_stats(self, found: TensorStatsResult) -> None:
        self.stats_button.setText("Compute initializer statistics")
        for name, stats in found.stats.items():
            row = self._rows.get(name)
            if row is not None:
                row.setText(2, stats.text())
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Every column on screen, the Value column taking the room (gui/common/columns.py)."""
        has_detail = any(
            self.tree.topLevelItem(i).child(c).text(2)
            for i in range(self.tree.topLevelItemCount())
            for c in range(self.tree.topLevelItem(i).childCount())
        )
        self.tree.setColumnHidden(2, not has_detail)
        fit_columns(self.tree, stretch=1)
        self.tree.doItemsLayout()  # rows measured again at the columns' new widths

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def text(self) -> str:
        lines = []
        for index in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(index)
            lines.append(top.text(0))
            for child in range(top.childCount()):
                item = top.child(child)
                lines.append("  " + " | ".join(item.text(c) for c in range(3)).rstrip(" |"))
        return "\n".join(lines)
