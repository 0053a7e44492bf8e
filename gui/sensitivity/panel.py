"""Sensitivity view: which layers must stay out of INT8 / FP16. Fills a ``SensitivityRequest``
(the worker runs it with progress and cancel), then shows the ranked layers, paints their
sensitivity on the graph, plots the error against the number of layers kept in FP32 with the
budget, and builds the chosen plan with TensorRT-RTX ahead of time where it is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.quantize.request import Method, Metric, Precision, SensitivityRequest
from deploylens.core.quantize.sensitivity import Report, Score
from deploylens.core.trt.request import BuildRequest
from deploylens.core.trt.result import BuildResult
from deploylens.core.trt.settings import BuildSettings, default_engine
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.choices import word
from deploylens.gui.common.columns import compact_rows, fit_columns
from deploylens.gui.common.lazy_plot import LazyPlot
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.common.styles import BAD_STYLE, IDLE_STYLE, VERDICT_STYLES
from deploylens.gui.common.table_items import NumberItem
from deploylens.gui.job_manager import JobManager

COLUMNS = ("rank", "node", "op", "only this node lowered", "all but this node lowered")


def _metric(score: Score, metric: str) -> float | None:
    return {"relL2": score.rel_l2, "cosine": score.cosine, "top1": score.top1}[metric]


class SensitivityPanel(QWidget):
    sig_node_selected = Signal(str)
    sig_overlay = Signal(str, dict, str)  # name, {node: value}, legend
    sig_message = Signal(str)

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.model_path = ""
        self.job: Any = None
        self.report: Report | None = None
        self.data = QLineEdit()
        self.data.setPlaceholderText("calibration images or .npy/.npz arrays (a folder)")
        self.eval_data = QLineEdit()
        self.eval_data.setPlaceholderText("held-out data (default: the calibration data)")
        self.labels = QLineEdit()
        self.labels.setPlaceholderText(".npy of class indices (then top-1 is accuracy)")
        self.preprocess = QLineEdit()
        self.preprocess.setPlaceholderText("imagenet, or resize=…,scale=…")
        self.precision = QComboBox()
        self.precision.addItems(["int8", "fp16"])
        self.method = QComboBox()
        self.method.addItems(["entropy", "minmax", "percentile"])
        self.metric_box = QComboBox()
        self.metric_box.addItems(["relL2", "cosine", "top1"])
        self.budget = QLineEdit()
        self.budget.setPlaceholderText(
            "default: relL2 0.02, cosine 0.999, top-1 0.99 (with labels: FP32's − 1 point)"
        )
        self.evaluate = QSpinBox()
        self.evaluate.setRange(1, 100_000)
        self.evaluate.setValue(64)
        self.run_button = QPushButton("Analyse")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.build_button = QPushButton("Build plan (TensorRT-RTX, ahead of time)")
        self.build_button.setEnabled(False)
        self.build_button.clicked.connect(self.build_plan)
        self.banner = QLabel("Open a model, give calibration data, then Analyse.")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(IDLE_STYLE)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.cellClicked.connect(self._on_row)
        self.table.verticalHeader().setVisible(False)
        compact_rows(self.table)
        self.curve: Any = None  # the plot's items, made with it (``_plot_items``)
        self.budget_line: Any = None
        self.chosen: Any = None
        self.plot_box = LazyPlot(self._plot_items)  # pyqtgraph: imported when first painted
        self._build()

    def _plot_items(self, pg: Any, plot: Any) -> None:
        plot.setLabel("bottom", "layers kept in FP32 (most sensitive first)")
        plot.showGrid(x=True, y=True, alpha=0.3)
        plot.getAxis("left").enableAutoSIPrefix(False)  # top-1 0.899, not "899 (x0.001)"
        self.curve = plot.plot([], [], pen=pg.mkPen("#1f77b4", width=2), symbol="o",
                               symbolSize=6)  # fmt: skip
        dashed = pg.mkPen("#d62728", style=Qt.PenStyle.DashLine)
        self.budget_line = pg.InfiniteLine(angle=0, pen=dashed)
        plot.addItem(self.budget_line)
        self.chosen = pg.ScatterPlotItem(size=14, pen=pg.mkPen("#2ca02c", width=2), brush=None)
        plot.addItem(self.chosen)

    def _build(self) -> None:
        form = QFormLayout()
        for label, widget, browse in (
            ("Calibration data", self.data, "folder"),
            ("Evaluation data", self.eval_data, "folder"),
            ("Labels", self.labels, "file"),
        ):
            row = QHBoxLayout()
            row.addWidget(widget, 1)
            button = QPushButton("…")
            button.clicked.connect(lambda _=False, w=widget, k=browse: self._browse(w, k))
            row.addWidget(button)
            form.addRow(label, row)
        form.addRow("Preprocess", self.preprocess)
        choices = QHBoxLayout()
        pairs: tuple[tuple[str, QWidget], ...] = (
            ("precision", self.precision), ("method", self.method),
            ("metric", self.metric_box), ("samples", self.evaluate),
        )  # fmt: skip
        for label, choice in pairs:
            choices.addWidget(QLabel(label))
            choices.addWidget(choice)
        choices.addStretch()
        form.addRow("", choices)
        form.addRow("Budget", self.budget)
        buttons = QHBoxLayout()
        for button in (self.run_button, self.cancel_button, self.build_button):
            buttons.addWidget(button)
        buttons.addStretch()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.plot_box)
        split.setSizes([600, 400])
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.banner)
        layout.addWidget(split, 1)

    def _browse(self, widget: QLineEdit, kind: str) -> None:
        path = (
            QFileDialog.getExistingDirectory(self, "Data folder")
            if kind == "folder"
            else QFileDialog.getOpenFileName(self, "Labels", "", "NumPy (*.npy)")[0]
        )
        if path:
            widget.setText(path)

    def model_opened(self, opened: OpenedModel) -> None:
        """The panel contract (gui/common/opened.py)."""
        self.set_model(opened.path)

    def set_model(self, path: str) -> None:
        """Another model: the last one's results go (they named its nodes); an analysis still
        running for it finishes in its worker and is said in the status bar, not shown here."""
        if path == self.model_path:
            return
        self.model_path = path
        self.job = None  # its answers are the old model's (see ``run``)
        self._busy(False)
        self.report = None
        self.table.setRowCount(0)
        if self.plot_box.built:
            self.curve.setData([], [])
            self.chosen.setData([], [])
        self.build_button.setEnabled(False)
        self._banner(f"{Path(path).name}: give calibration data, then Analyse.", IDLE_STYLE)

    # -- the job ---------------------------------------------------------------------------------
    def request(self) -> SensitivityRequest:
        if not self.model_path:
            raise UserError("Open an ONNX model first.")
        if not self.data.text().strip():
            raise UserError("Give a calibration data folder.")
        budget = self.budget.text().strip()
        try:
            value = float(budget) if budget else None
        except ValueError:
            raise UserError(f"'{budget}' is not a number (the budget).") from None
        return SensitivityRequest(  # out: the request's default, beside the model (one policy)
            self.model_path, self.data.text().strip(),
            precision=word(self.precision.currentText(), Precision),
            method=word(self.method.currentText(), Method),
            metric=word(self.metric_box.currentText(), Metric),
            budget=value, preprocess=self.preprocess.text().strip(),
            evaluate=self.evaluate.value(), eval_data=self.eval_data.text().strip(),
            labels=self.labels.text().strip(),
        )  # fmt: skip

    def set_request(self, request: SensitivityRequest) -> None:
        """Fill the form from a request (a project's step, a copied command)."""
        self.model_path = request.model
        self.data.setText(request.data)
        self.precision.setCurrentText(request.precision)
        self.method.setCurrentText(request.method)
        self.metric_box.setCurrentText(request.metric)
        self.budget.setText("" if request.budget is None else repr(request.budget))
        self.preprocess.setText(request.preprocess)
        self.evaluate.setValue(request.evaluate)
        self.eval_data.setText(request.eval_data)
        self.labels.setText(request.labels)

    def run(self) -> None:
        try:
            request = self.request().prepared()
        except UserError as exc:
            self._banner(exc.message, BAD_STYLE)
            return
        self._busy(True)
        self._banner("Calibrating once, then every node lowered alone and kept alone …", IDLE_STYLE)
        job = self.jobs.submit_request(request, f"Sensitivity {Path(self.model_path).name}")
        self.job = job
        name = Path(self.model_path).name
        job.sig_progress.connect(lambda f, t: self._progress(job, f, t))
        job.on_finished(lambda report: self._answer(job, name, report))
        job.sig_failed.connect(lambda failure: self._failed(failure, job))

    def _progress(self, job: Any, fraction: float | None, text: str) -> None:
        if job is self.job:
            done = f" {fraction:.0%}" if isinstance(fraction, float) else ""
            self._banner(f"Sensitivity …{done} {text}", IDLE_STYLE)

    def _answer(self, job: Any, name: str, report: Report) -> None:
        if job is self.job:
            self.show_report(report)
        else:  # the model it analysed is no longer open
            where = report.files.model if report.files else report.model
            self.sig_message.emit(f"Sensitivity of {name} finished: {where}")

    def cancel(self) -> None:
        if self.job is not None and self.job.active:
            self.job.cancel()

    def _busy(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)

    def _failed(self, failure: JobFailure, job: Any = None) -> None:
        if job is not None and job is not self.job:
            return  # the analysis of a model that is no longer open
        self._busy(False)
        self.job = None
        self._banner(f"{failure.message}\n{failure.hint}".strip(), BAD_STYLE)

    def _banner(self, text: str, style: str) -> None:
        self.banner.setText(text)
        self.banner.setStyleSheet(style)

    # -- results ---------------------------------------------------------------------------------
    def show_report(self, report: Report) -> None:
        self._busy(False)
        self.job = None
        self.report = report
        metric = report.metric
        rows = report.nodes
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        for index, row in enumerate(rows):
            cells = [NumberItem(row.rank, 0), QTableWidgetItem(row.node),
                     QTableWidgetItem(row.op), NumberItem(_metric(row.only, metric), 6),
                     NumberItem(_metric(row.all_but, metric), 6)]  # fmt: skip
            for column, cell in enumerate(cells):
                self.table.setItem(index, column, cell)
        self.table.setSortingEnabled(True)
        self.table.sortItems(0, Qt.SortOrder.AscendingOrder)
        fit_columns(self.table, stretch=1)
        kept = [p.kept for p in report.curve]
        values = [_metric(p.score, metric) or 0.0 for p in report.curve]
        plot = self.plot_box.plot  # made now if never painted: its items come with it
        self.curve.setData(kept, values)
        step = max(1, (max(kept, default=0) + 9) // 10)  # whole layers: no "0.2 layers" tick
        plot.getAxis("bottom").setTickSpacing(major=step, minor=step)
        plot.setLabel("left", metric)
        self.budget_line.setValue(report.budget)
        plan = report.plan
        self.chosen.setData([len(plan.kept)], [_metric(plan.score, metric) or 0.0])
        precision = report.precision.upper()
        self.sig_overlay.emit(
            f"{precision} sensitivity ({metric})",
            {row.node: _metric(row.only, metric) for row in rows},
            f"{metric} with only that node in {precision}",
        )
        files = f" Files: {report.files.model}, {report.files.settings}" if report.files else ""
        verdict = report.verdict()  # the CLI's exit code and first line
        notes = "".join(f"\nNote: {note}" for note in report.notes)  # the CLI's notes, too
        self._banner(
            f"{verdict.word} {len(rows)} nodes analysed in {report.seconds:.2f} s.{files}{notes}",
            VERDICT_STYLES[verdict.severity],
        )
        self.build_button.setEnabled(True)

    def _on_row(self, row: int, _column: int) -> None:
        item = self.table.item(row, 1)
        if item is not None:
            self.sig_node_selected.emit(item.text())

    def _built(self, result: BuildResult) -> None:
        verdict = result.verdict()  # the Build panel's and the CLI's sentence
        self._banner(verdict.word, VERDICT_STYLES[verdict.severity])

    def build_plan(self) -> None:
        """The plan's model built ahead of time by TensorRT-RTX (real where it is installed)."""
        if self.report is None:
            return
        if self.report.files is None:
            return
        model = self.report.files.model
        request = BuildRequest(model, engine=default_engine(model), version="rtx",
                               settings=BuildSettings(compute_capabilities=["sm89"]))  # fmt: skip
        job = self.jobs.submit_request(request, "Build the precision plan")
        job.on_finished(self._built)
        job.sig_failed.connect(self._failed)
