"""Model summary panel: what is inside the open model, from the worker's ``model.inspect``."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QResizeEvent
from PySide6.QtWidgets import (
    QLabel,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.model.summary import ModelSummary
from deploylens.core.model.summary_text import human_bytes, shape_text
from deploylens.gui.common.columns import fit_columns

_PROBLEM = QColor("#b3261e")
_WARNING = QColor("#8a5a00")
CHECKING = "onnx's checker and strict shape inference run once the graph is shown"


class ModelSummaryPanel(QWidget):
    """Empty → loading → summary (or the reason the file did not open)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary: ModelSummary | None = None
        self.message = QLabel("Open an ONNX model: File → Open, or drop a .onnx file here.")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Property", "Value", "Detail"])
        self.tree.setAlternatingRowColors(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.tree)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    def show_loading(self, path: str) -> None:
        self.message.setText(f"Reading {path} …\n(weights stay on disk)")
        self.stack.setCurrentWidget(self.message)

    def show_error(self, text: str) -> None:
        self.summary = None
        self.message.setText(f"Could not open the model:\n{text}")
        self.stack.setCurrentWidget(self.message)

    def show_summary(self, summary: ModelSummary, checking: bool = False) -> None:
        """``checking``: the checker's findings are still to come (they follow the graph)."""
        self.summary = summary
        tree = self.tree
        tree.clear()
        self._fill(summary, checking)
        tree.expandToDepth(0)
        for index in range(tree.topLevelItemCount()):  # long lists stay folded
            item = tree.topLevelItem(index)
            item.setExpanded(item.childCount() <= 12 or index < 1)
        self.stack.setCurrentWidget(tree)
        self._fit()

    def _fit(self) -> None:
        """Property names keep their full width (they are short and what a reader scans; and
        their width then depends on no value, such as the file's path); Value and Detail share
        the rest, Value stretching."""
        tree = self.tree
        tree.resizeColumnToContents(0)
        labels = min(tree.columnWidth(0), int(tree.viewport().width() * 0.45))
        fit_columns(tree, stretch=1, floor={0: labels})

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.summary is not None:
            self._fit()

    def visible_text(self) -> str:
        """All text in the tree (tests and the screenshot check read it)."""
        lines: list[str] = []

        def walk(item: QTreeWidgetItem | None, depth: int) -> None:
            if item is None:
                return
            lines.append("  " * depth + " | ".join(item.text(c) for c in range(3)).rstrip(" |"))
            for index in range(item.childCount()):
                walk(item.child(index), depth + 1)

        for index in range(self.tree.topLevelItemCount()):
            walk(self.tree.topLevelItem(index), 0)
        return "\n".join(lines)

    def _section(self, title: str, value: str = "") -> QTreeWidgetItem:
        item = QTreeWidgetItem([title, value])
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        self.tree.addTopLevelItem(item)
        return item

    def _fill(self, s: ModelSummary, checking: bool) -> None:
        general = self._section("Model", s.path)
        rows = [
            ("Graph", s.graph_name or "(unnamed)", ""),
            ("Producer", f"{s.producer_name} {s.producer_version}".strip() or "?", ""),
            ("IR version", str(s.ir_version), ""),
            ("File size", human_bytes(s.file_bytes), ""),
            ("Model version", str(s.model_version), ""),
        ]
        rows += [(f"metadata: {k}", v, "") for k, v in s.metadata.items()]
        for row in rows:
            QTreeWidgetItem(general, list(row))
        opsets = self._section("Opset imports", str(len(s.opset_imports)))
        for domain, version in sorted(s.opset_imports.items()):
            QTreeWidgetItem(opsets, [domain, str(version)])
        for title, values in (("Inputs", s.inputs), ("Outputs", s.outputs)):
            section = self._section(title, str(len(values)))
            for value in values:
                QTreeWidgetItem(section, [value.name, value.type, shape_text(value.shape)])
        nodes = self._section("Nodes", f"{s.node_count:,}")
        if s.subgraph_count:
            nodes.setText(2, f"+{s.subgraph_node_count:,} in {s.subgraph_count} subgraph(s)")
        for op in s.op_counts:
            QTreeWidgetItem(nodes, [op.op_type, f"{op.count:,}", op.domain])
        init = self._section("Initializers", f"{s.initializer_count:,}")
        init.setText(2, human_bytes(s.initializer_bytes))
        for item in s.external_data:
            entry = QTreeWidgetItem(
                init,
                [
                    f"external: {item.location}",
                    f"{item.tensors} tensors, {human_bytes(item.bytes_referenced)}",
                    item.problem or "present",
                ],
            )
            if item.problem:
                entry.setForeground(2, QBrush(_PROBLEM))
        if s.functions:
            functions = self._section("Local functions", str(len(s.functions)))
            for function in s.functions:
                QTreeWidgetItem(
                    functions, [function.name, f"{function.nodes} nodes", function.domain]
                )
        if s.warnings or s.problems or checking:
            count = str(len(s.warnings) + len(s.problems))
            notes = self._section("Findings", f"{count}, checking …" if checking else count)
            if checking:
                QTreeWidgetItem(notes, ["checking", CHECKING])
            for text, colour, label in [(p, _PROBLEM, "problem") for p in s.problems] + [
                (w, _WARNING, "warning") for w in s.warnings
            ]:
                finding = QTreeWidgetItem(notes, [label, text])
                finding.setForeground(1, QBrush(colour))
                finding.setToolTip(1, text)
            notes.setExpanded(True)
