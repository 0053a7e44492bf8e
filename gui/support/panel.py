"""Op support panel: ops by opset and backend, filters, the open model's blockers and fixes."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.model.domains import domain_name
from deploylens.core.model.loading import read_model
from deploylens.core.support.analysis import TargetReport, analyze, collect_ops, parse_target
from deploylens.core.support.live import live_report, measured_report
from deploylens.core.support.loader import with_plugins
from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.support.measure import read_measured, verdict
from deploylens.core.support.measured_types import MEASURED_LEVELS, MeasuredMatrix
from deploylens.core.support.queries import span_text
from deploylens.core.support.request import (
    CollectRequest,
    MeasuredRequest,
    TensorRTOpsRequest,
    TensorRTProbeRequest,
)
from deploylens.core.support.result import (
    MeasuredCache,
    OperatorImporters,
    RegistryCache,
    plugin_list,
)
from deploylens.core.support.tensorrt_table import table_versions
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.background import BackgroundTask
from deploylens.gui.common.columns import set_widths
from deploylens.gui.job_manager import JobManager
from deploylens.gui.support.table_model import SupportTableModel, legend_html

ALL_DOMAINS = "(all domains)"
LIVE_TARGET = "trt-rtx (live)"  # the installed TensorRT-RTX parser, asked about the open model
# predicted from the cells measured here, without a parse: the CLI's measured targets
MEASURED_TARGETS = {
    f"{target.removesuffix('-measured')} (measured)": level
    for target, level in MEASURED_LEVELS.items()
}


class OpSupportPanel(QWidget):
    sig_ready = Signal(object)  # SupportMatrix
    sig_analyzed = Signal(object)  # list[TargetReport]
    sig_op_selected = Signal(str, str)  # domain, op
    sig_overlay = Signal(str, dict)  # overlay name, {node_name: category}
    sig_message = Signal(str)

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.matrix: SupportMatrix | None = None
        self.table_model: SupportTableModel | None = None
        self.model_path: str | None = None
        self.document_proto: Any = None  # the shell's parsed model, shared with the other panels
        self.model_ops: dict[tuple[str, str], Any] = {}
        self.reports: list[TargetReport] = []
        self.tasks: list[BackgroundTask] = []
        self._requested = False
        self.live: OperatorImporters | None = None  # TensorRT-RTX's importers, once asked
        self.live_note = "TensorRT-RTX (live): asking the worker …"
        self.status = QLabel("The support registries load when this panel is first shown.")
        self.status.setWordWrap(True)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter ops …")
        self.domain = QComboBox()
        self.in_model = QCheckBox("ops in the open model")
        self.blockers_only = QCheckBox("only blockers")
        self.target = QComboBox()
        self.show_on_graph = QPushButton("Show support on graph")
        self.measure_button = QPushButton("Measure support here …")
        self.measure_button.setToolTip(
            "Probe every op × opset × input type on the installed TensorRT-RTX (parse + "
            "ahead-of-time build) and ONNX Runtime CPU: a few minutes on 2 cores, in the "
            "worker, cached per library version (deploylens support --measured)"
        )
        self.measured_note = "measured matrix: looking for one measured here …"
        self.measured_data: MeasuredMatrix | None = None
        self.table = QTableView()
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(True)  # the op names: they never scroll away
        self.legend = QLabel(legend_html())
        self.legend.setWordWrap(True)
        self.aten_table = QTableWidget(0, 3)
        self.aten_table.setHorizontalHeaderLabels(
            ["PyTorch op", "TorchScript exporter (opsets)", "dynamo exporter (torchlib)"]
        )
        self.aten_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.findings = QTreeWidget()
        self.findings.setHeaderLabels(["Target / op", "Why", "Nodes"])
        self.findings.setColumnWidth(0, 200)
        self.findings.setColumnWidth(1, 620)
        self._build()

    def _build(self) -> None:
        filters = QHBoxLayout()
        for widget in (
            self.search,
            self.domain,
            self.in_model,
            self.blockers_only,
            QLabel("target"),
            self.target,
            self.show_on_graph,
            self.measure_button,
        ):
            filters.addWidget(widget)
        tabs = QTabWidget()
        matrix_tab = QWidget()
        matrix_layout = QVBoxLayout(matrix_tab)
        matrix_layout.setContentsMargins(0, 0, 0, 0)
        matrix_layout.addWidget(self.legend)
        matrix_layout.addWidget(self.table, 1)
        tabs.addTab(matrix_tab, "ONNX ops × opset × backend")
        tabs.addTab(self.aten_table, "PyTorch ops × exporter")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(tabs)
        split.addWidget(self.findings)
        split.setSizes([500, 220])
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addLayout(filters)
        layout.addWidget(split, 1)
        self.search.textChanged.connect(self.apply_filters)
        self.domain.currentTextChanged.connect(self.apply_filters)
        self.in_model.toggled.connect(self.apply_filters)
        self.blockers_only.toggled.connect(self.apply_filters)
        self.target.currentTextChanged.connect(lambda _: self.analyze())
        self.show_on_graph.clicked.connect(self.emit_overlay)
        self.measure_button.clicked.connect(lambda: self.load_measured(only_cached=False))
        self.table.clicked.connect(self._on_row)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        # Qt shows every tabbed dock once while building the window: load only if the panel is
        # really on screen once the event loop has settled (the registries take seconds).
        QTimer.singleShot(0, self._load_if_on_screen)

    def _load_if_on_screen(self) -> None:
        if not self._requested and self.isVisible() and not self.visibleRegion().isEmpty():
            self.load()

    def ensure_loaded(self) -> None:
        """Another panel needs the matrix (the export fix ladder): load it if nobody has."""
        if not self._requested:
            self.load()

    # -- loading -------------------------------------------------------------------------------
    def load(self, refresh: bool = False) -> None:
        self._requested = True
        self.status.setText(
            "Collecting the registries in the worker (ONNX spec, PyTorch "
            "exporters, ONNX Runtime kernels); cached after the first time …"
        )
        job = self.jobs.submit_request(CollectRequest(refresh), "Op support registries")
        job.on_finished(self._on_collected)
        job.sig_failed.connect(self._on_failed)

    def _on_failed(self, failure: JobFailure) -> None:
        self.status.setText(f"The registries could not be collected: {failure.message}")

    def _on_collected(self, answer: RegistryCache) -> None:
        task = BackgroundTask(lambda: with_plugins(SupportMatrix.load(answer.path)), self)
        task.sig_done.connect(self._on_matrix)
        task.sig_failed.connect(lambda exc, tb: self.status.setText(f"Unreadable cache: {exc}"))
        self.tasks.append(task)
        task.start()

    def _on_matrix(self, matrix: SupportMatrix) -> None:
        self.matrix = matrix
        self.table_model = SupportTableModel(matrix)
        self.table.setModel(self.table_model)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        set_widths(
            self.table,
            {
                column: 26 if column < self.table_model.first_ort_column else 64
                for column in range(2, self.table_model.columnCount())
            },
        )
        self.table.setColumnHidden(0, True)  # the op is the row's header (it stays on screen)
        self.domain.blockSignals(True)
        self.domain.clear()
        self.domain.addItems([ALL_DOMAINS, *sorted({d for d, _ in matrix.ops()})])
        self.domain.blockSignals(False)
        self.target.blockSignals(True)
        self.target.clear()
        self.target.addItems(
            [f"ort-{p.removesuffix('ExecutionProvider').lower()}" for p in matrix.ort_providers]
        )
        self.target.addItems([f"trt-{v}" for v in reversed(table_versions())])
        self.target.blockSignals(False)
        self._fill_aten()
        self._show_status()
        self.apply_filters()
        # ready once the live parser answered too (or said it is missing), so the targets and
        # columns a user sees do not change under them
        job = self.jobs.submit_request(TensorRTOpsRequest(), "TensorRT-RTX operators (live)")
        job.on_finished(self._on_live_ops)
        job.sig_failed.connect(self._on_live_failed)

    def _ready(self) -> None:
        assert self.matrix is not None
        self._show_status()
        self.sig_ready.emit(self.matrix)
        if self.model_path:
            self.set_model(self.model_path, self.document_proto)
        self.load_measured(only_cached=True)

    # -- the measured matrix -------------------------------------------------------------------
    def load_measured(self, only_cached: bool) -> None:
        """Show a measurement made here before (fast), or measure now (minutes, in a worker,
        with progress and cancel in the jobs list)."""
        request = MeasuredRequest(only_cached=only_cached, refresh=self.measured_data is not None)
        title = "Measured op support (cache)" if only_cached else "Measuring op support"
        if not only_cached:
            self.measure_button.setEnabled(False)
            self.measured_note = "measured matrix: probing in the worker (minutes) …"
            self._show_status()
        job = self.jobs.submit_request(request, title)
        job.on_finished(self._on_measured)
        job.sig_failed.connect(self._on_measure_failed)

    def _on_measured(self, answer: MeasuredCache) -> None:
        self.measure_button.setEnabled(True)
        if not answer.path:
            self.measured_note = (
                "measured matrix: not measured on this machine yet (Measure support here …)"
            )
            self._show_status()
            return
        path = answer.path
        task = BackgroundTask(lambda: read_measured(path), self)
        task.sig_done.connect(self.set_measured)
        task.sig_failed.connect(lambda exc, tb: self._on_measure_failed(exc))
        self.tasks.append(task)
        task.start()

    def set_measured(self, data: MeasuredMatrix) -> None:
        self.measured_data = data
        self.measure_button.setText("Measure again …")
        self.measured_note = data.status_line() + "; the TRT table columns are from documentation"
        listed = {self.target.itemText(i) for i in range(self.target.count())}
        for label in MEASURED_TARGETS:
            if label not in listed:
                self.target.addItem(label)
        if self.table_model is not None:
            self.table_model.set_measured(data)
            column = self.table_model.measured_column
            set_widths(self.table, {column: 84, column + 1: 84})
        self._show_status()

    def _on_measure_failed(self, failure: Any) -> None:
        self.measure_button.setEnabled(True)
        self.measured_note = f"measured matrix: {getattr(failure, 'message', failure)}"
        self._show_status()

    def _show_status(self) -> None:
        assert self.matrix is not None
        versions = self.matrix.data.get("versions", {})
        trt = self.matrix.data.get("tensorrt_installed")
        self.status.setText(
            f"onnx {versions.get('onnx')}, torch {versions.get('torch')}, onnxruntime "
            f"{versions.get('onnxruntime')} ({', '.join(self.matrix.ort_providers)}); TensorRT "
            f"tables {table_versions()[0]}–{table_versions()[-1]} (newer versions fall back to "
            f"{table_versions()[-1]} with a warning); live TensorRT: "
            f"{trt or 'not installed'}; {self.live_note} {self.measured_note}"
        )

    def _on_live_ops(self, answer: OperatorImporters) -> None:
        """The installed TensorRT-RTX answers: a live column, and its parser becomes the
        TensorRT target for the open model (a real parse beats the bundled table)."""
        self.live = answer
        release = ".".join(answer.version.split(".")[:2])
        self.live_note = (
            f"{answer.product} {answer.version} (live): "
            f"{sum(answer.ops.values())} of {len(answer.ops)} ONNX ops have an importer"
        )
        if answer.plugins is not None:  # what its registry holds, not the classic library's list
            self.live_note += f"; its plugin registry holds {plugin_list(answer.plugins)}"
        self.live_note += "."
        if self.table_model is not None:
            self.table_model.set_live(f"RTX {release} live", answer.ops)
            set_widths(self.table, {self.table_model.live_column: 72})
        self.target.blockSignals(True)
        self.target.insertItem(0, LIVE_TARGET)
        self.target.setCurrentIndex(0)
        self.target.blockSignals(False)
        self._ready()

    def _on_live_failed(self, failure: JobFailure) -> None:
        self.live_note = f"TensorRT-RTX (live): {failure.message} {failure.hint}".strip()
        self._ready()

    def _fill_aten(self) -> None:
        assert self.matrix is not None
        torchscript = self.matrix.torchscript.get("ops", {})
        dynamo = self.matrix.dynamo.get("ops", {})
        names = sorted(set(torchscript) | set(dynamo))
        self.aten_table.setRowCount(len(names))
        for row, name in enumerate(names):
            opsets = torchscript.get(name, [])
            ts = f"{opsets[0]}–{opsets[-1]}" if opsets else "no symbolic"
            self.aten_table.setItem(row, 0, QTableWidgetItem(name))
            self.aten_table.setItem(row, 1, QTableWidgetItem(ts))
            self.aten_table.setItem(row, 2, QTableWidgetItem("yes" if name in dynamo else "no"))

    # -- model ---------------------------------------------------------------------------------
    def set_model(self, path: str, proto: Any = None) -> None:
        """Analyse ``path`` against the targets; ``proto`` is the open document's parsed model
        (the shell parses it once for every panel), read here only when none is given."""
        self.model_path = path
        self.document_proto = proto
        if self.matrix is None:
            return
        matrix = self.matrix

        def work() -> tuple[Any, dict[tuple[str, str], Any]]:
            model = proto if proto is not None else read_model(path)
            return model, collect_ops(model, matrix)

        task = BackgroundTask(work, self)
        task.sig_done.connect(lambda result: self._on_model(path, *result))
        task.sig_failed.connect(lambda exc, tb: self.sig_message.emit(f"Support analysis: {exc}"))
        self.tasks.append(task)
        task.start()

    def _on_model(self, path: str, model: Any, uses: dict[tuple[str, str], Any]) -> None:
        if path != self.model_path or self.table_model is None:
            return
        self.model_proto = model
        self.model_ops = uses
        opsets = {domain_name(o.domain): o.version for o in model.opset_import}
        self.table_model.set_model_ops({k: len(u.nodes) for k, u in uses.items()}, opsets)
        listed = {self.domain.itemText(i) for i in range(self.domain.count())}
        for domain in sorted({d for d, _ in uses} - listed):  # custom domains of this model
            self.domain.addItem(domain)
        self.in_model.setChecked(True)
        self.analyze()

    def analyze(self) -> None:
        if self.matrix is None or not self.model_ops or not self.target.currentText():
            return
        if self.target.currentText() == LIVE_TARGET:
            self._analyze_live()
            return
        if self.target.currentText() in MEASURED_TARGETS:
            self._analyze_measured(self.target.currentText())
            return
        model, matrix, uses = self.model_proto, self.matrix, self.model_ops
        target = parse_target(self.target.currentText())
        # ~0.13 s for a 10k-node model: off the UI thread
        task = BackgroundTask(lambda: analyze(model, matrix, [target], uses), self)
        task.sig_done.connect(lambda reports: self._on_reports(target.label, reports))
        task.sig_failed.connect(lambda exc, tb: self.sig_message.emit(f"Analysis failed: {exc}"))
        self.tasks.append(task)
        task.start()

    def _analyze_measured(self, label: str) -> None:
        """The open model judged by the measured cells, off the UI thread (no parse)."""
        model, data = self.model_proto, self.measured_data
        assert data is not None  # the target is listed only once a measurement loaded
        level = MEASURED_TARGETS[label]
        opsets = {domain_name(o.domain): o.version for o in model.opset_import}

        def work() -> list[TargetReport]:
            found = verdict(model, data, level)
            return [measured_report(label, found, opsets.get("ai.onnx", 0))]

        task = BackgroundTask(work, self)
        task.sig_done.connect(lambda reports: self._on_reports(label, reports))
        task.sig_failed.connect(lambda exc, tb: self.sig_message.emit(f"Analysis failed: {exc}"))
        self.tasks.append(task)
        task.start()

    def _analyze_live(self) -> None:
        """The open model through the installed TensorRT-RTX parser, in the worker."""
        path = self.model_path or ""
        opsets = {domain_name(o.domain): o.version for o in self.model_proto.opset_import}
        job = self.jobs.submit_request(
            TensorRTProbeRequest(path, "tensorrt_rtx"), "TensorRT-RTX parser (live)"
        )
        job.on_finished(
            lambda result: (
                self._on_reports(
                    LIVE_TARGET,
                    [live_report("trt-rtx", result, opsets.get("ai.onnx", 0))],
                )
                if path == self.model_path
                else None
            )
        )
        job.sig_failed.connect(
            lambda failure: self.sig_message.emit(f"TensorRT-RTX parser: {failure.message}")
        )

    def _on_reports(self, label: str, reports: list[TargetReport]) -> None:
        if label != self.target.currentText():
            return  # the user picked another target meanwhile
        self.reports = reports
        self._show_findings()
        self.apply_filters()
        self.sig_analyzed.emit(self.reports)

    def _show_findings(self) -> None:
        self.findings.clear()
        for report in self.reports:
            span = span_text(report)
            verdict = report.verdict()  # the CLI's exit status reads the same
            head = ("OK" if verdict.severity == "pass" else verdict.word) + " — "
            top = QTreeWidgetItem([report.target, head + span, ""])
            self.findings.addTopLevelItem(top)
            for blocker in report.blockers:
                item = QTreeWidgetItem(
                    top,
                    [
                        blocker.op,
                        blocker.reason,
                        f"{blocker.count}: {', '.join(blocker.nodes[:4])}",
                    ],
                )
                item.setToolTip(1, blocker.reason)
                for fix in blocker.fixes:
                    QTreeWidgetItem(item, [f"{fix.step}. {fix.rung}", fix.title, ""])
            top.setExpanded(True)

    def blocked_ops(self) -> set[tuple[str, str]]:
        blocked = set()
        for report in self.reports:
            for blocker in report.blockers:
                domain, _, op = blocker.op.rpartition("::")
                blocked.add((domain or "ai.onnx", op))
        return blocked

    # -- filters, selection, overlay ---------------------------------------------------------------
    def apply_filters(self) -> None:
        if self.table_model is None or self.matrix is None:
            return
        text = self.search.text().strip().lower()
        domain = self.domain.currentText()
        known = self.matrix.ops()
        # a custom-domain op is in no registry, and is exactly the row a user came to see
        extra = sorted(set(self.model_ops) - set(known))
        rows = [
            (d, o)
            for d, o in [*known, *extra]
            if (not text or text in o.lower())
            and (domain in ("", ALL_DOMAINS) or d == domain)
            and (not self.in_model.isChecked() or (d, o) in self.model_ops or not self.model_ops)
            and (not self.blockers_only.isChecked() or (d, o) in self.blocked_ops())
        ]
        self.table_model.set_rows(rows)

    def _on_row(self, index: QModelIndex) -> None:
        if self.table_model is not None and index.isValid():
            self.sig_op_selected.emit(*self.table_model.rows[index.row()])

    def support_overlay(self) -> dict[str, str]:
        """{node_name: "supported" | "blocked: <reason>"} for the current target."""
        mapping: dict[str, str] = {}
        blocked = {}
        for report in self.reports:
            for blocker in report.blockers:
                for name in blocker.nodes:
                    blocked[name] = "blocked"
        for use in self.model_ops.values():
            for name in use.nodes:
                mapping[name] = blocked.get(name, "supported")
        return mapping

    def emit_overlay(self) -> None:
        if self.reports:
            self.sig_overlay.emit(f"support ({self.target.currentText()})", self.support_overlay())
