"""Validate panel: ONNX Runtime against PyTorch (or ONNX Runtime unoptimized), output by output
and layer by layer, in the worker; the first diverging node, a sortable per-node table that
selects nodes in the graph, error against depth, and the error painted on the graph."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.pytorch.source import parse_spec
from deploylens.core.settings import config_dir
from deploylens.core.validate.records import Layerwise, OutputComparison, Unmapped
from deploylens.core.validate.request import ValidateRequest
from deploylens.core.validate.result import ValidationResult, within_text
from deploylens.core.validate.saved import load_result, save_csv, save_result
from deploylens.core.validate.tolerances import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    STATISTICS,
    Tolerances,
    parse_tolerance,
)
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.columns import compact_rows, fit_columns
from deploylens.gui.common.copy_request import CopyRequestButton
from deploylens.gui.common.lazy_plot import LazyPlot
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.common.styles import BAD_STYLE, BOLD, IDLE_STYLE, VERDICT_STYLES
from deploylens.gui.job_manager import JobManager
from deploylens.gui.validate.layers_model import NODE_ROLE, SORT_ROLE, LayersTableModel

OVERLAY_NAME = "validation error (rel L2)"
FAIL_STYLE = BAD_STYLE + BOLD


def results_dir() -> Path:
    return config_dir() / "results"


class ValidatePanel(QWidget):
    sig_node_selected = Signal(str)  # ONNX node name
    sig_overlay = Signal(str, dict, float)  # overlay name, {node name: error}, the rel L2 limit
    sig_result = Signal(object)  # the ValidationResult, after it was saved
    sig_message = Signal(str)

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.model_path: str = ""
        self.result: ValidationResult | None = None
        self.ran: ValidateRequest | None = None  # what made the result: what a project keeps
        self.result_path: Path | None = None
        self.job: Any = None
        self.torch_spec = QLineEdit()
        self.torch_spec.setPlaceholderText(
            "reference model: hf:DIR, timm:NAME, torchvision:resnet18, sample:NAME, "
            "FILE.py:factory, MODEL.pt2 — empty: ONNX Runtime with optimizations off"
        )
        self.trust = QCheckBox("I trust this Python file (the reference runs its code)")
        self.inputs = QLineEdit()
        self.inputs.setPlaceholderText(
            "inputs: .npz by input name, or a folder of images/arrays (empty: seeded random)"
        )
        self.preprocess = QLineEdit()
        self.preprocess.setPlaceholderText(
            "image folders: imagenet, or resize=256,crop=224,mean=a/b/c,std=a/b/c,scale=1/255"
        )
        defaults = ValidateRequest()
        self.rtol = QLineEdit(repr(DEFAULT_RTOL))
        self.atol = QLineEdit(repr(DEFAULT_ATOL))
        self.rel_l2 = QLineEdit()
        self.rel_l2.setPlaceholderText("max(0.01, rtol)")
        for box in (self.rtol, self.atol, self.rel_l2):
            box.setToolTip("N, or N; OUTPUT:N; … per output")
        self.quantile = QDoubleSpinBox()
        self.quantile.setRange(0.0, 1.0)
        self.quantile.setDecimals(4)
        self.quantile.setValue(defaults.tolerances.quantile)
        self.quantile.setToolTip("for the quantile statistic")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(defaults.seed)
        self.seed.setToolTip("for seeded random inputs")
        self.statistic = QComboBox()
        self.statistic.addItems(list(STATISTICS))
        self.layerwise = QCheckBox("Layer by layer (every mapped intermediate tensor)")
        self.layerwise.setChecked(defaults.layerwise)
        self.budget = QDoubleSpinBox()
        self.budget.setRange(16, 65536)
        self.budget.setValue(defaults.budget_mb)
        self.budget.setSuffix(" MB")
        self.budget.setToolTip("activations held at once; bigger models are compared in chunks")
        self.run_button = QPushButton("Validate")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.open_button = QPushButton("Open result…")
        self.open_button.clicked.connect(self._choose_open)
        self.save_button = QPushButton("Export…")
        self.save_button.setToolTip("the result as JSON, or the per-node table as CSV")
        self.save_button.clicked.connect(self._choose_export)
        self.copy_button = CopyRequestButton(self.request)
        self.copy_button.sig_message.connect(self.sig_message)
        self.banner = QLabel("No validation yet.")
        self.banner.setStyleSheet(IDLE_STYLE)
        self.banner.setWordWrap(True)
        self.outputs = QTableWidget(0, 9)
        self.outputs.setHorizontalHeaderLabels(
            [
                "Output",
                "Max abs",
                "Mean abs",
                "Max rel",
                "Rel L2",
                "Cosine",
                "Within",
                "NaN",
                "Why it fails",
            ]
        )
        self.outputs.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.layers_model = LayersTableModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.layers_model)
        self.proxy.setSortRole(SORT_ROLE)
        self.layers = QTableView()
        self.layers.setModel(self.proxy)
        self.layers.setSortingEnabled(True)
        compact_rows(self.layers)
        self.layers.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.layers.clicked.connect(self._on_layer_clicked)
        self.unmapped = QTableWidget(0, 2)
        self.unmapped.setHorizontalHeaderLabels(["Module call", "Why it is not compared"])
        self.unmapped.horizontalHeader().setStretchLastSection(True)
        self.plot_box = LazyPlot(_error_axes)  # pyqtgraph: imported when first painted
        self._build()

    def _build(self) -> None:
        form = QFormLayout()
        form.addRow("Reference", self.torch_spec)
        form.addRow("", self.trust)
        form.addRow("Inputs", self.inputs)
        form.addRow("Preprocess", self.preprocess)
        form.addRow("Seed", self.seed)
        tolerances = QHBoxLayout()
        for label, widget in (
            ("rtol", self.rtol),
            ("atol", self.atol),
            ("rel L2", self.rel_l2),
            ("", self.statistic),
            ("q", self.quantile),
        ):
            if label:
                tolerances.addWidget(QLabel(label))
            tolerances.addWidget(widget)
        form.addRow("Tolerances", tolerances)
        depth = QHBoxLayout()
        depth.addWidget(self.layerwise)
        depth.addWidget(QLabel("memory budget"))
        depth.addWidget(self.budget)
        form.addRow("", depth)
        buttons = QHBoxLayout()
        for button in (
            self.run_button,
            self.cancel_button,
            self.open_button,
            self.save_button,
            self.copy_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch()
        tabs = QTabWidget()
        tabs.addTab(self.layers, "Layers")
        tabs.addTab(self.plot_box, "Error vs depth")
        tabs.addTab(self.outputs, "Outputs")
        tabs.addTab(self.unmapped, "Unmapped")
        self.tabs = tabs
        splitter = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(form)
        top_layout.addLayout(buttons)
        top_layout.addWidget(self.banner)
        splitter.addWidget(top)
        splitter.addWidget(tabs)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

    # -- settings (and the project table that keeps them) ----------
    def model_opened(self, opened: OpenedModel) -> None:
        """The panel contract (gui/common/opened.py): the model and its [validate] table."""
        self.set_model(opened.path, opened.table("validate"))

    def set_model(self, path: str, table: dict[str, Any] | None = None) -> None:
        """A newly opened model; ``table`` is the project's [validate] table, if any. Without
        one, what named the last model (its PyTorch module, its inputs) goes and the user's
        choices (tolerances, statistic, seed, layer-wise, budget, preprocess) stay."""
        self.model_path = path
        self.torch_spec.setText("")
        self.inputs.setText("")
        self.result, self.ran = None, None
        self.banner.setText("No validation yet.")
        self.banner.setStyleSheet(IDLE_STYLE)
        self._clear_views()  # the last model's rows and curve never stand beside a new model
        if not table:
            return
        try:
            if "request" in table:  # the request's own fields, read strictly
                self.ran = ValidateRequest.from_project(table["request"], "validate", path=path)
                self.set_request(self.ran)
            else:
                self._set_legacy(table)
        except UserError as exc:
            self.sig_message.emit(exc.message)
            return
        last = table.get("last_result")
        if isinstance(last, str) and last and Path(last).is_file():
            try:
                self.show_result(load_result(last), Path(last))
            except UserError as exc:
                self.sig_message.emit(f"The last validation could not be re-opened: {exc.message}")

    def _clear_views(self) -> None:
        self._fill_outputs([])
        self.layers_model.set_layers([], "")
        self._fill_unmapped([])
        self.plot_points: list[tuple[int, float]] = []
        if self.plot_box.built:
            self.plot_box.plot.clear()

    def _set_legacy(self, table: dict[str, Any]) -> None:
        """A project saved before its [validate] table held the request: the form's texts
        (they are parsed as typed ones when the validation runs)."""
        defaults = ValidateRequest()
        self.torch_spec.setText(str(table.get("torch", "")))
        self.inputs.setText(str(table.get("inputs", "")))
        self.preprocess.setText(str(table.get("preprocess", "")))
        self.rtol.setText(str(table.get("rtol", repr(DEFAULT_RTOL))))
        self.atol.setText(str(table.get("atol", repr(DEFAULT_ATOL))))
        self.statistic.setCurrentText(str(table.get("statistic", defaults.tolerances.statistic)))
        self.rel_l2.setText(str(table.get("rel_l2", "")))
        self.quantile.setValue(float(table.get("quantile", defaults.tolerances.quantile)))
        self.seed.setValue(int(table.get("seed", defaults.seed)))
        self.layerwise.setChecked(bool(table.get("layerwise", defaults.layerwise)))
        self.budget.setValue(float(table.get("budget_mb", defaults.budget_mb)))

    def project_table(self) -> dict[str, Any]:
        """The request that made the last result, through its own TOML, and where the result
        was saved."""
        table: dict[str, Any] = {}
        if self.ran is not None:
            table["request"] = self.ran.project_table()
        if self.result_path is not None:
            table["last_result"] = str(self.result_path)
        return table

    def tolerances(self) -> Tolerances:
        def values(box: QLineEdit) -> list[str]:
            return [v.strip() for v in box.text().replace(",", ";").split(";") if v.strip()]

        return Tolerances(
            rtol=parse_tolerance(values(self.rtol), DEFAULT_RTOL),
            atol=parse_tolerance(values(self.atol), DEFAULT_ATOL),
            statistic=self.statistic.currentText(),
            quantile=self.quantile.value(),
            rel_l2=parse_tolerance(values(self.rel_l2), None),
        )

    def request(self) -> ValidateRequest:
        """The form as the request the CLI would fill from the same settings."""
        if not self.model_path:
            raise UserError("Open an ONNX model first.")
        spec = self.torch_spec.text().strip()
        return ValidateRequest(
            path=self.model_path,
            torch=parse_spec(spec) if spec else None,
            inputs=self.inputs.text().strip(),
            preprocess=self.preprocess.text().strip() if self.inputs.text().strip() else "",
            tolerances=self.tolerances(),
            seed=self.seed.value(),
            layerwise=self.layerwise.isChecked(),
            budget_mb=self.budget.value(),
        )

    def set_request(self, request: ValidateRequest) -> None:
        """Fill the form from a request (a round trip gives the same request back)."""
        self.model_path = request.path
        self.torch_spec.setText(request.torch.spec() if request.torch else "")
        self.inputs.setText(request.inputs)
        self.preprocess.setText(request.preprocess)
        t = request.tolerances
        for box, values in ((self.rtol, t.rtol), (self.atol, t.atol), (self.rel_l2, t.rel_l2)):
            box.setText("; ".join(f"{k}:{v!r}" if k else repr(v) for k, v in values.items()))
        self.statistic.setCurrentText(t.statistic)
        self.quantile.setValue(t.quantile)
        self.seed.setValue(request.seed)
        self.layerwise.setChecked(request.layerwise)
        self.budget.setValue(request.budget_mb)

    def _ready_request(self) -> ValidateRequest:
        request = self.request()
        source = request.torch
        if source is not None and source.kind == "python" and not self.trust.isChecked():
            raise UserError(
                f"The reference {Path(source.target).name} is Python code: tick 'I trust "
                "this Python file' to let the worker run it."
            )
        return request.prepared(trust=self.trust.isChecked())

    # -- running ----------
    def run(self) -> None:
        try:
            request = self._ready_request()
        except UserError as exc:
            self.sig_message.emit(exc.message)
            self._set_banner(exc.message, IDLE_STYLE)
            return
        self._set_banner("Validating in the worker …", IDLE_STYLE)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        job = self.jobs.submit_request(request, f"Validate {Path(self.model_path).name}")
        self.job, self.ran = job, request
        job.sig_progress.connect(self._on_progress)
        job.on_finished(self._on_finished)
        job.sig_failed.connect(self._on_failed)

    def cancel(self) -> None:
        if self.job is not None and self.job.active:
            self.job.cancel()

    def _on_progress(self, fraction: Any, text: str) -> None:
        done = f" {fraction:.0%}" if isinstance(fraction, float) else ""
        self._set_banner(f"Validating …{done} {text}", IDLE_STYLE)

    def _on_failed(self, failure: JobFailure) -> None:
        self._idle()
        self._set_banner(f"{failure.message}\n{failure.hint}".strip(), FAIL_STYLE)
        self.sig_message.emit(failure.message)

    def _on_finished(self, result: ValidationResult) -> None:
        self._idle()
        path = results_dir() / f"{Path(self.model_path).stem}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        try:
            save_result(result, path)
        except OSError as exc:
            self.sig_message.emit(f"The result could not be saved in {path.parent}: {exc}")
            path = None  # type: ignore[assignment]
        self.show_result(result, path)
        self.sig_result.emit(result)

    def _idle(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    # -- showing ----------
    def _set_banner(self, text: str, style: str) -> None:
        self.banner.setText(text)
        self.banner.setStyleSheet(style)

    def show_result(self, result: ValidationResult, path: Path | None = None) -> None:
        self.result, self.result_path = result, path
        lw = result.layerwise
        first = result.first_diverging
        verdict = result.verdict()  # the CLI's exit code comes from the same: never a green
        style = VERDICT_STYLES[verdict.severity] + BOLD
        text = f"{verdict.word}: {result.candidate} vs {result.reference}"
        if lw is not None and first is not None:
            failing_layers = sum(1 for layer in lw.layers if not layer.passed)
            text += (
                f" — first diverging node {first.node} ({first.op_type}); "
                f"{failing_layers} of {lw.compared} compared tensors outside the tolerance"
            )
        elif lw is not None:
            text += f" — all {lw.compared} compared tensors agree"
        failing = [o for o in result.outputs if not o.passed and o.reason]
        if failing:
            text += f"\n{failing[0].name}: {failing[0].reason}"
        if result.inputs_used:
            text += f"\nInputs: {result.inputs_used}"
        for note in result.notes:
            text += f"\nNote: {note}"
        self._set_banner(text, style)
        self._fill_outputs(result.outputs)
        self.layers_model.set_layers(lw.layers if lw else [], first.node if first else "")
        self.layers.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # graph order, inputs first
        fit_columns(self.layers, stretch=1)
        self._fill_unmapped(lw.unmapped if lw else [])
        if lw is not None:
            self._plot(lw, result.tolerances.rel_l2_for(""))
            errors = result.node_errors()
            if errors:
                self.sig_overlay.emit(OVERLAY_NAME, errors, result.tolerances.rel_l2_for(""))

    def _fill_outputs(self, outputs: list[OutputComparison]) -> None:
        self.outputs.setRowCount(len(outputs))
        for row, o in enumerate(outputs):
            cells = [
                ("✓ " if o.passed else "✗ ") + o.name,
                *(f"{value:.3g}" for value in (o.max_abs, o.mean_abs, o.max_rel, o.rel_l2)),
                f"{o.cosine:.6f}",
                within_text(o.within),
                str(o.nan),
                o.reason,
            ]
            for column, text in enumerate(cells):
                self.outputs.setItem(row, column, QTableWidgetItem(text))

    def _fill_unmapped(self, unmapped: list[Unmapped]) -> None:
        self.unmapped.setRowCount(len(unmapped))
        for row, item in enumerate(unmapped):
            self.unmapped.setItem(row, 0, QTableWidgetItem(item.module))
            self.unmapped.setItem(row, 1, QTableWidgetItem(item.reason))

    def _plot(self, lw: Layerwise, limit: float) -> None:
        """Rel L2 error against topological position (log scale, decades on the axis — not a
        "×1e-09" factor), the limit a layer passes under as a dashed line, the first divergence
        marked."""
        plot = self.plot_box.plot  # made now if its tab was never painted
        import pyqtgraph as pg  # imported with the plot

        plot.clear()
        dashed = pg.mkPen("#d62728", width=1, style=Qt.PenStyle.DashLine)
        self.limit_line = pg.InfiniteLine(
            math.log10(limit), angle=0, pen=dashed, label=f"limit {limit:g}",
            labelOpts={"position": 0.05, "color": "#d62728"},
        )  # fmt: skip
        plot.addItem(self.limit_line)
        points = [
            (layer.index, max(layer.rel_l2, 1e-12))
            for layer in lw.layers
            if not math.isnan(layer.rel_l2)
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            plot.plot(list(xs), list(ys), pen=pg.mkPen("#1f77b4", width=2), symbol="o",
                      symbolSize=5, symbolBrush="#1f77b4")  # fmt: skip
        first = lw.first_diverging
        if first is not None:
            plot.addItem(pg.InfiniteLine(first.index, pen=pg.mkPen("#d62728", width=2)))
        self.plot_points = points

    def _on_layer_clicked(self, index: Any) -> None:
        node = self.proxy.data(index, NODE_ROLE)
        if node:
            self.sig_node_selected.emit(str(node))

    # -- files ----------
    def _choose_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open validation result", str(results_dir()), "*.json"
        )
        if path:
            self.open_result(path)

    def open_result(self, path: str | Path) -> None:
        try:
            self.show_result(load_result(path), Path(path))
        except UserError as exc:
            self.sig_message.emit(exc.message)

    def _choose_export(self) -> None:
        if self.result is None:
            self.sig_message.emit("Validate (or open a result) first.")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export validation", "validation.json", "JSON result (*.json);;CSV table (*.csv)"
        )
        if path:
            self.export_to(path)

    def export_to(self, path: str | Path) -> Path:
        if self.result is None:
            raise UserError("There is no result to export.")
        path = Path(path)
        if path.suffix.lower() == ".csv":
            return save_csv(self.result, path)
        return save_result(self.result, path)


def _error_axes(_pg: Any, plot: Any) -> None:
    """Rel L2 error on a log axis with decades, not a "×1e-09" factor."""
    plot.setLogMode(y=True)
    plot.setLabel("bottom", "node position (topological)")
    plot.setLabel("left", "rel L2 error")
    plot.getAxis("left").enableAutoSIPrefix(False)
    plot.getAxis("bottom").enableAutoSIPrefix(False)
    plot.showGrid(x=True, y=True, alpha=0.3)
