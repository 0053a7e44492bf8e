"""Properties of the selected node or group; initializer statistics on request."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QPushButton,
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


class PropertiesView(QWidget):
    sig_stats_requested = Signal(list)  # initializer names

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Property", "Value", "Detail"])
        self.tree.setAlternatingRowColors(True)
        self.tree.setWordWrap(True)
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
