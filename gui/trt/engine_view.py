"""Engine panel: a built (or imported) engine — a summary first (latency, time by layer type
and by precision, what the reformat layers cost, the slowest layers: TREx's first page), then
the full-width layer table in engine order (type, precisions, time, share, tactic, formats, the
ONNX nodes each layer fused), latency/precision overlays on the graph, and a diff against
another engine or profile. Reads trtexec/TREx JSON; no TensorRT needed."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.engine.layers import EngineInfo, load_layer_info
from deploylens.core.engine.report import EngineDiff, EngineSummary, LayerRow, Share
from deploylens.core.engine.timings import LayerTime, load_profile
from deploylens.core.engine.view import (
    diff_engines,
    engine_summary,
    latency_overlay,
    layer_table,
    precision_overlay,
)
from deploylens.core.errors import UserError
from deploylens.gui.common.columns import compact_rows, fit_columns
from deploylens.gui.common.table_items import NumberItem

COLUMNS = ["#", "Layer", "Type", "In", "Out", "ms", "%", "Tactic", "Formats", "ONNX nodes"]
NAME_COLUMN, NODES_COLUMN = 1, 9
JSON_FILTER = "TensorRT JSON (*.json)"


class EngineView(QWidget):
    sig_node_selected = Signal(str)
    sig_overlay = Signal(str, dict, str, bool)  # name, values, legend, log scale
    sig_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.info: EngineInfo | None = None
        self.times: list[LayerTime] = []
        self.rows: list[LayerRow] = []
        self.summary = QLabel(
            "Open a layer-info JSON (trtexec --exportLayerInfo), or build an engine."
        )
        self.summary.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.cellClicked.connect(self._on_clicked)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        compact_rows(self.table)
        header = self.table.horizontalHeader()
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)

        self.diff = QPlainTextEdit()
        self.diff.setReadOnly(True)
        self.diff.setPlaceholderText("Diff: open a second engine's layer info (and profile).")
        buttons = QHBoxLayout()
        for text, slot in (
            ("Open layers…", self.choose_layers),
            ("Open profile…", self._choose_profile),
            ("Diff with…", self._choose_diff),
        ):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        buttons.addStretch()
        tabs = QTabWidget()
        tabs.addTab(self.table, "Layers")
        tabs.addTab(self.diff, "Diff")
        self.tabs = tabs
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.summary)
        layout.addWidget(tabs)

    # -- loading ----------------------------------------------------------------------------------
    def load(self, layers: str | Path, profile: str | Path | None = None) -> None:
        self.info = load_layer_info(layers)
        self.times = load_profile(profile)[1] if profile else []
        self._show()

    def load_profile(self, profile: str | Path) -> None:
        if self.info is None:
            raise UserError("Open the engine's layer info first; the profile names its layers.")
        self.times = load_profile(profile)[1]
        self._show()

    def diff_with(self, layers: str | Path, profile: str | Path | None = None) -> EngineDiff:
        if self.info is None:
            raise UserError("Open the first engine's layer info first.")
        other = load_layer_info(layers)
        other_times = load_profile(profile)[1] if profile else []
        diff = diff_engines(self.info, other, self.times, other_times)
        self.diff.setPlainText(diff.text())
        self.tabs.setCurrentWidget(self.diff)
        return diff

    def _show(self) -> None:
        assert self.info is not None
        self.rows = layer_table(self.info, self.times)
        self.summary.setText(
            summary_html(engine_summary(self.info, self.rows)) + holds_html(self.info.layers)
        )
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(self.rows))
        for row, r in enumerate(self.rows):
            cells: list[QTableWidgetItem] = [
                NumberItem(r.index, 0),
                QTableWidgetItem(r.name),
                QTableWidgetItem(r.type),
                QTableWidgetItem(r.in_precision),
                QTableWidgetItem(r.out_precision),
                NumberItem(r.time_ms),
                NumberItem(r.percent, 1),
                QTableWidgetItem(r.tactic),
                QTableWidgetItem(r.formats()),
                QTableWidgetItem(r.region or ", ".join(r.onnx_nodes)),
            ]
            cells[NAME_COLUMN].setData(Qt.ItemDataRole.UserRole, r.onnx_nodes)
            cells[NAME_COLUMN].setToolTip(r.name)
            for column, item in enumerate(cells):
                self.table.setItem(row, column, item)
        self.table.setSortingEnabled(True)
        self.table.sortItems(0, Qt.SortOrder.AscendingOrder)  # engine order, as TensorRT runs it
        self._fit_columns()
        if self.times:
            self.sig_overlay.emit(
                "TensorRT latency (ms)",
                latency_overlay(self.info, self.times),
                "ms per ONNX node (fused layers shared equally)",
                True,
            )
        self.sig_overlay.emit(
            "TensorRT precision", precision_overlay(self.info), "layer output precision", False
        )

    def _fit_columns(self) -> None:
        """Every column on screen (ms, % and tactic included); the fused ONNX nodes take the
        room left (gui/common/columns.py)."""
        fit_columns(self.table, stretch=NODES_COLUMN)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self.rows:
            self._fit_columns()

    def _on_clicked(self, row: int, _column: int) -> None:
        nodes = self.table.item(row, NAME_COLUMN).data(Qt.ItemDataRole.UserRole) or []
        if nodes:
            self.sig_node_selected.emit(nodes[0])

    # -- dialogs ----------------------------------------------------------------------------------
    def _pick(self, title: str) -> str:
        return QFileDialog.getOpenFileName(self, title, "", JSON_FILTER)[0]

    def _guarded(self, action: Any, *args: Any) -> None:
        try:
            action(*args)
        except UserError as exc:
            self.sig_message.emit(exc.message)
            self.summary.setText(exc.message)

    def choose_layers(self) -> None:
        if path := self._pick("Engine layer info"):
            self._guarded(self.load, path)

    def _choose_profile(self) -> None:
        if path := self._pick("trtexec --exportProfile JSON"):
            self._guarded(self.load_profile, path)

    def _choose_diff(self) -> None:
        if path := self._pick("The other engine's layer info"):
            self._guarded(self.diff_with, path)


def _share(ms: float | None, percent: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.3f} ms" + (f" ({percent:.1f} %)" if percent is not None else "")


def holds_html(layers: list[Any]) -> str:
    """What fused layers hold, from the builder's own account (``[ONNX Layer: …]`` metadata): an
    ahead-of-time RTX plan is often one Myelin "ForeignNode" that read as nothing at all."""
    fused = [layer for layer in layers if len(layer.onnx_nodes) > 1]
    if not fused:
        return ""
    lines = []
    for layer in fused[:5]:
        shown = ", ".join(layer.onnx_nodes[:8]) + (" …" if len(layer.onnx_nodes) > 8 else "")
        lines.append(
            f"<b>{html.escape(layer.name[:60])}</b> holds {len(layer.onnx_nodes)} ONNX nodes: "
            f"{html.escape(shown)}"
        )
    more = f"<br>… and {len(fused) - 5} more fused layers" if len(fused) > 5 else ""
    return "<p>" + "<br>".join(lines) + more + "</p>"


def summary_html(summary: EngineSummary) -> str:
    """The engine's summary as three small tables side by side."""
    esc = html.escape
    head = f"<b>{esc(Path(summary.path).name)}</b>: {summary.layers} layers"
    if summary.total_ms is not None:
        head += f", <b>{summary.total_ms:.3f} ms</b> per inference (profile)"
    elif summary.path.endswith("builder-layers.json"):  # TensorRT-RTX, ahead of time
        head += " (the builder's own account) — no times: the plan was built ahead of time"
    else:
        head += " — open the profile (trtexec --exportProfile) for times"
    if not summary.detailed:
        head += " · names only: build with --profilingVerbosity=detailed"
    reformat = f"{summary.reformat_layers} reformat layers"
    if summary.reformat_ms is not None:
        reformat += f", {summary.reformat_ms:.3f} ms"
    head += f" · {reformat} · {summary.regions} Myelin regions"

    def table(title: str, rows: list[tuple[str, str]]) -> str:
        body = "".join(
            f"<tr><td>{esc(a)}</td><td align='right'>&nbsp;{b}</td></tr>" for a, b in rows
        )
        return f"<td valign='top'><b>{title}</b><table>{body}</table></td>"

    def line(entry: Share) -> tuple[str, str]:
        ms = entry.ms if summary.timed else None
        return entry.name, f"{entry.layers} · {_share(ms, entry.percent)}"

    by_type = [line(e) for e in summary.by_type]  # core folds the tail into "other"
    by_precision = [line(e) for e in summary.by_precision]
    slowest = [(r.name[:48], _share(r.time_ms, r.percent)) for r in summary.slowest]
    cells = table("By layer type", by_type) + table("By precision", by_precision)
    if slowest:
        cells += table("Slowest layers", slowest)
    return f"{head}<table cellspacing='12'><tr>{cells}</tr></table>"
