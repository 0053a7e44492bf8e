"""The Timeline panel: open or capture a trace, the overview + detail view, search, details of the
selected event, per-kernel table with a distribution plot, stream/overlap/copy statistics with
hints, statistics of a selected range, and exports (Chrome JSON, CSV, PNG).

Traces are imported on a Python thread (msgspec/NumPy, no user code); captures run the model and
therefore go to the worker subprocess."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QScrollBar,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_bytes
from deploylens.core.settings import cache_dir
from deploylens.core.trace.export import write_chrome, write_csv
from deploylens.core.trace.index import TimelineIndex, gpu_window
from deploylens.core.trace.links import event_nodes, events_of_node
from deploylens.core.trace.model import KIND, KINDS, Trace, member
from deploylens.core.trace.request import LabRequest
from deploylens.core.trace.result import LabResult, ProfileResult, SweepResult
from deploylens.core.trace.stats import trace_stats
from deploylens.core.trace.stats_types import KernelRow, TraceStats
from deploylens.core.wording import counted, duration_text
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.background import BackgroundTask
from deploylens.gui.common.columns import compact_rows, fit_columns, keep_fitted, name_floor
from deploylens.gui.common.lazy_plot import LazyPlot
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.common.table_items import NumberItem
from deploylens.gui.job_manager import JobManager
from deploylens.gui.timeline.canvas import TimelineCanvas, format_ns
from deploylens.gui.timeline.capture_dialogs import CaptureDialog, SweepView, check_request
from deploylens.gui.timeline.loading import open_trace, summarize
from deploylens.gui.timeline.overview import TimelineOverview
from deploylens.gui.timeline.summary_html import details_html, summary_html

TRACE_FILTER = (
    "Traces (*.json *.json.gz *.gz *.sqlite *.db);;Chrome/Kineto JSON (*.json *.json.gz);;"
    "Nsight Systems SQLite (*.sqlite);;All files (*)"
)
KERNEL_COLUMNS = [
    ("name", "Name"),
    ("count", "Count"),
    ("total_us", "Total"),
    ("mean_us", "Mean"),
    ("median_us", "Median"),
    ("p90_us", "p90"),
    ("p99_us", "p99"),
    ("min_us", "Min"),
    ("max_us", "Max"),
    ("gpu_percent", "% time"),
]


# Range statistics of up to this many events are computed at once (~0.1 s), more on a thread.
SYNC_RANGE_EVENTS = 150_000


class TimelinePanel(QWidget):
    sig_nodes = Signal(list)  # ONNX node names for the selected event, most specific first
    sig_overlay = Signal(str, dict, str, bool)  # name, {node: ms}, legend, log scale
    sig_message = Signal(str)

    def __init__(self, jobs: JobManager | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timeline-panel")
        self.jobs = jobs
        self.trace: Trace | None = None
        self.index: TimelineIndex | None = None
        self.stats: TraceStats | None = None
        self.range_stats: TraceStats | None = None
        self.path = ""
        self.model_path = ""
        self.loading_since = 0.0
        self.task: BackgroundTask | None = None
        self.stats_task: BackgroundTask | None = None
        self.range_task: BackgroundTask | None = None
        self.job: Any = None
        self.export_task: BackgroundTask | None = None
        self.canvas = TimelineCanvas()
        self.overview = TimelineOverview()
        self.overview.header_w = lambda: self.canvas.header_w
        self.canvas.sig_view_changed.connect(self.overview.set_region)
        self.overview.sig_navigate.connect(self.canvas.set_view)
        self.canvas.sig_selected.connect(self._on_selected)
        self.canvas.sig_range_selected.connect(self.select_range)
        self._build()

    # -- layout --------------------------------------------------------------------------------
    def _build(self) -> None:
        bar = QHBoxLayout()
        self.open_button = self._button("Open trace…", self.choose_trace, bar)
        self.capture_button = self._button("Profile…", self.capture, bar)
        self.capture_button.setToolTip(
            "Run a model repeatedly under a profiler in the worker: ONNX Runtime (the open "
            "model), PyTorch (serial, pipelined or CUDA-graph on a GPU) or a TensorRT engine"
        )
        self.sweep_button = self._button("Sweep…", self.sweep, bar)
        self.sweep_button.setToolTip("batch × streams × mode: a table and a throughput plot")
        lab = QToolButton()
        lab.setText("Lab")
        lab.setToolTip(
            "Scenarios that reproduce what bounds a GPU run (real on a GPU, synthetic without)"
        )
        lab.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        lab_menu = QMenu(lab)
        from deploylens.core.trace.lab import SCENARIOS

        for name, what in SCENARIOS.items():
            lab_menu.addAction(f"{name}: {what}", functools.partial(self.run_lab, name))
        lab.setMenu(lab_menu)
        bar.addWidget(lab)
        self.search = QLineEdit(placeholderText="Search kernels / events by name")
        self.search.returnPressed.connect(lambda: self.step(True))
        bar.addWidget(self.search, 1)
        self._button("◀", lambda: self.step(False), bar)
        self._button("▶", lambda: self.step(True), bar)
        self.match_label = QLabel("")
        bar.addWidget(self.match_label)
        self._button("Fit", self.canvas.fit, bar)
        export = QToolButton()
        export.setText("Export")
        export.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(export)
        menu.addAction("Chrome trace JSON (Perfetto)…", self.choose_chrome_export)
        menu.addAction("Tables as CSV…", self.choose_csv_export)
        menu.addAction("View as PNG…", self.choose_png_export)
        export.setMenu(menu)
        bar.addWidget(export)
        self.status = QLabel(
            "Open a trace (PyTorch/Kineto, ONNX Runtime, Nsight Systems SQLite, trtexec "
            "--exportTimes/--exportProfile) or profile the open model."
        )
        self.status.setWordWrap(True)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.setSpacing(2)
        top_layout.addWidget(self.overview)
        lanes = QHBoxLayout()
        lanes.setContentsMargins(0, 0, 0, 0)
        lanes.setSpacing(0)
        lanes.addWidget(self.canvas, 1)
        self.lane_scroll = QScrollBar(Qt.Orientation.Vertical)
        self.lane_scroll.setRange(0, 0)
        self.lane_scroll.valueChanged.connect(self.canvas.scroll_to)
        self.canvas.sig_scrolled.connect(self._on_scrolled)
        lanes.addWidget(self.lane_scroll)
        top_layout.addLayout(lanes, 1)

        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.details.anchorClicked.connect(lambda url: self.canvas.select(int(url.path()), True))
        self.kernels = QTableWidget(0, len(KERNEL_COLUMNS))
        self.kernels.setHorizontalHeaderLabels([title for _, title in KERNEL_COLUMNS])
        self.kernels.setSortingEnabled(True)
        self.kernels.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.kernels.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # C++ kernel names are long
        self.kernels.setWordWrap(False)
        compact_rows(self.kernels)
        self.kernels.itemSelectionChanged.connect(self._on_kernel_row)
        keep_fitted(self.kernels, self._fit_kernels)
        self.histogram_box = LazyPlot(_histogram_axes)
        self.histogram_box.setMinimumHeight(120)
        kernels_tab = QSplitter(Qt.Orientation.Horizontal)
        kernels_tab.addWidget(self.kernels)
        kernels_tab.addWidget(self.histogram_box)
        kernels_tab.setSizes([600, 300])
        self.summary = QTextBrowser()
        self.range_view = QTextBrowser()
        self.sweep_view = SweepView()
        self.sweep_view.sig_open_trace.connect(self.load)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.details, "Details")
        self.tabs.addTab(kernels_tab, "Kernels")
        self.tabs.addTab(self.summary, "Streams / overlap / copies")
        self.tabs.addTab(self.range_view, "Range")
        self.tabs.addTab(self.sweep_view, "Sweep")

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.tabs)
        split.setSizes([520, 260])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)

    def _on_scrolled(self, position: int, limit: int) -> None:
        self.lane_scroll.blockSignals(True)
        self.lane_scroll.setRange(0, limit)
        self.lane_scroll.setPageStep(max(self.canvas.height() - 40, 20))
        self.lane_scroll.setValue(position)
        self.lane_scroll.setVisible(limit > 0)
        self.lane_scroll.blockSignals(False)

    def _button(self, text: str, slot: Any, layout: QHBoxLayout) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(slot)
        layout.addWidget(button)
        return button

    # -- open / capture ------------------------------------------------------------------------
    def choose_trace(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a trace", "", TRACE_FILTER)
        if path:
            self.load(path)

    def load(self, path: str) -> BackgroundTask:
        self.status.setText(f"Importing {Path(path).name} …")
        self.loading_since = time.perf_counter()
        task = self.task = BackgroundTask(lambda: open_trace(path, task.partial), self)
        current = lambda: task is self.task  # noqa: E731 - a file opened later wins
        task.sig_partial.connect(lambda result: self._on_partial(task, path, *result))
        task.sig_done.connect(lambda result: self._on_loaded(path, *result) if current() else None)
        task.sig_failed.connect(lambda *fail: self._on_load_failed(*fail) if current() else None)
        return task.start()

    def _on_load_failed(
        self, exc: BaseException, details: str, what: str = "open the trace"
    ) -> None:
        text = exc.message if isinstance(exc, UserError) else f"Could not {what}: {exc}"
        self.status.setText(text)
        self.sig_message.emit(text)

    def _on_stats_failed(self, exc: BaseException, details: str) -> None:
        self._on_load_failed(exc, details, "compute the statistics")

    def _on_partial(
        self, task: BackgroundTask, path: str, trace: Trace, index: TimelineIndex
    ) -> None:
        """The events read so far, drawn while the rest loads (no statistics yet)."""
        if task is not self.task:  # another file was opened meanwhile
            return
        self.path, self.trace, self.index, self.stats = path, trace, index, None
        self.canvas.set_index(index)
        self.overview.set_index(index)
        self.overview.set_region(self.canvas.t0, self.canvas.t1)
        self._clear_results("<i>Statistics follow the complete file (still loading) …</i>")
        self.status.setText(
            f"Importing {Path(path).name} … {len(trace):,} events on "
            f"{counted(len(trace.lanes), 'lane')} "
            f"so far, after {time.perf_counter() - self.loading_since:.1f} s (a partial view: "
            "the rest is still loading; statistics follow the complete file)."
        )

    def _clear_results(self, summary: str) -> None:
        """No statistics, details or range of another trace beside this one."""
        self.range_stats = None
        self._fill_kernels([])
        self.summary.setHtml(summary)
        self.details.setHtml("<i>Click an event for its details.</i>")
        self.range_view.setHtml("<i>Shift+drag in the timeline to select a time range.</i>")

    def _on_loaded(self, path: str, trace: Trace, index: TimelineIndex, seconds: float) -> None:
        self.path, self.trace, self.index, self.stats = path, trace, index, None
        self.canvas.set_index(index)
        window = gpu_window(trace)
        if window is not None:  # the GPU's part of a long capture first; F shows it all
            self.canvas.set_view(*window)
        self.overview.set_index(index)
        self.overview.set_region(self.canvas.t0, self.canvas.t1)
        counts = np.bincount(trace.kind, minlength=len(KINDS)) if len(trace) else np.zeros(0, int)
        kinds = ", ".join(f"{KINDS[k]} {int(c):,}" for k, c in enumerate(counts) if c)
        meta = trace.meta
        text = (
            f"{Path(path).name}: {meta.get('format', '')} {meta.get('version', '')} — "
            f"{len(trace):,} events on {counted(len(trace.lanes), 'lane')}, "
            f"{format_ns(index.span[1] - index.span[0])} (opened in {seconds:.2f} s). {kinds}"
        )
        if window is not None:
            text += (
                f"\nShowing the {format_ns(window[1] - window[0])} where the GPU works "
                f"(F fits the whole {format_ns(index.span[1] - index.span[0])})."
            )
        if meta.get("synthetic_times"):
            text += f"\n⚠ Times: {meta['synthetic_times']}."
        self.status.setText(text)
        self._clear_results("<i>Computing statistics …</i>")
        self.stats_task = BackgroundTask(lambda: summarize(trace), self)
        self.stats_task.sig_done.connect(lambda result: self._on_stats(trace, *result))
        self.stats_task.sig_failed.connect(self._on_stats_failed)
        self.stats_task.start()

    def _on_stats(self, trace: Trace, stats: TraceStats, latency: dict[str, float]) -> None:
        if trace is not self.trace:  # another trace was opened meanwhile
            return
        self.stats = stats
        self._fill_kernels(stats.kernels)
        self.summary.setHtml(summary_html(stats))
        if latency:
            self.sig_overlay.emit("Latency (timeline)", latency, "ms per run (groups: sum)", True)

    def model_opened(self, opened: OpenedModel) -> None:
        """The panel contract (gui/common/opened.py): the model the Profile button runs."""
        self.model_path = opened.path

    def capture(self, accept: bool = True) -> CaptureDialog | None:
        """The Profile dialog; ``accept=False`` returns it unopened (tests fill it)."""
        if self.jobs is None:
            return None
        dialog = CaptureDialog(self.model_path, sweep=False, parent=self)
        if accept and dialog.exec() != CaptureDialog.DialogCode.Accepted:
            return dialog
        if accept:
            self.submit_capture(dialog)
        return dialog

    def submit_capture(self, dialog: CaptureDialog) -> None:
        assert self.jobs is not None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = Path(dialog.form.model.text().strip() or "model").stem.replace(":", "-")
        if dialog.form.sweep:
            out = str(cache_dir() / "sweeps" / f"{name}.{stamp}")
        else:
            out = str(
                cache_dir() / "traces" / f"{name}.{dialog.form.backend.currentText()}.{stamp}.json"
            )
        request, problem = check_request(dialog, out)
        if request is None:
            self.status.setText(problem)
            return
        self.capture_button.setEnabled(False)
        self.sweep_button.setEnabled(False)
        self.status.setText(f"{dialog.windowTitle()}: {request.model} …")
        job = self.jobs.submit_request(request.prepared(), f"{dialog.windowTitle()} {name}")
        self.job = job
        job.sig_progress.connect(lambda f, t: self.status.setText(f"{dialog.windowTitle()}: {t}"))
        job.on_finished(self._swept if dialog.form.sweep else self._captured)
        job.sig_failed.connect(self._capture_failed)
        if dialog.form.sweep:  # points show up as they finish, in whatever order
            self.sweep_view.start()
            self.tabs.setCurrentWidget(self.sweep_view)
            job.sig_data.connect(self.sweep_view.add_data)

    def sweep(self, accept: bool = True) -> CaptureDialog | None:
        if self.jobs is None:
            return None
        dialog = CaptureDialog(self.model_path, sweep=True, parent=self)
        if accept and dialog.exec() == CaptureDialog.DialogCode.Accepted:
            self.submit_capture(dialog)
        return dialog

    def run_lab(self, name: str) -> None:
        """A lab scenario in the worker (real kernels on a GPU, else a synthetic trace)."""
        if self.jobs is None:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = str(cache_dir() / "traces" / f"lab-{name}.{stamp}.json")
        self.status.setText(f"Lab {name} …")
        job = self.jobs.submit_request(LabRequest(name, out), f"Lab {name}")
        self.job = job
        job.on_finished(self._lab_done)
        job.sig_failed.connect(self._capture_failed)

    def _lab_done(self, result: LabResult) -> None:
        made = result.made()
        self.sig_message.emit(f"Lab {result.lab}: {made}; diagnosis: {result.pattern}")
        self.load(result.trace)

    def _captured(self, result: ProfileResult) -> None:
        self._idle()
        extra = [*result.notes, *result.flags]
        self.sig_message.emit(
            f"Profiled: {result.headline()}" + ("; " + "; ".join(extra) if extra else "")
        )
        self.load(result.trace)

    def _swept(self, result: SweepResult) -> None:
        self._idle()
        self.sweep_view.show_result(result)
        self.tabs.setCurrentWidget(self.sweep_view)
        retried = f", {result.retried} retried" if result.retried else ""
        self.status.setText(
            f"Sweep{result.where()}: {result.ran} points ran, {result.skipped} skipped, "
            f"{result.failed} failed{retried} — double-click a row or click a point to open "
            f"its trace ({result.outputs.csv})"
        )

    def _idle(self) -> None:
        self.capture_button.setEnabled(True)
        self.sweep_button.setEnabled(True)

    def _capture_failed(self, failure: JobFailure) -> None:
        self._idle()
        self.status.setText(f"{failure.message}\n{failure.hint}".strip())

    # -- selection, search, linking --------------------------------------------------------------
    def _on_selected(self, event: int) -> None:
        if self.index is None or event < 0:
            self.details.setHtml("<i>Nothing selected.</i>")
            return
        info = self.index.details(event)
        nodes = event_nodes(self.index, event)
        self.details.setHtml(details_html(info, nodes))
        self.tabs.setCurrentWidget(self.details)
        if nodes:
            self.sig_nodes.emit(nodes)

    def step(self, forward: bool) -> None:
        if self.index is None:
            return
        text = self.search.text()
        hits = self.index.matches(text)
        self.match_label.setText(f"{hits.size:,} matches" if text.strip() else "")
        if not hits.size:
            return
        current = self.canvas.selected
        after = (
            int(self.index.trace.start[current])
            if current >= 0
            else (self.canvas.t0 if forward else self.canvas.t1)
        )
        found = self.index.step(text, after, forward)
        if found == current and hits.size > 1:  # same start as another match: move past it
            position = int(np.flatnonzero(hits == current)[0])
            found = int(hits[(position + (1 if forward else -1)) % hits.size])
        self.canvas.select(found, center=True)

    def select_node(self, node: str) -> bool:
        """The graph selected ``node``: select its first event here (ORT node / TRT layer)."""
        if self.trace is None:
            return False
        hits = events_of_node(self.trace, node)
        if not hits.size:
            return False
        self.canvas.select(int(hits[0]), center=True)
        return True

    def _on_kernel_row(self) -> None:
        rows = self.kernels.selectionModel().selectedRows() if self.kernels.selectionModel() else []
        if not rows or self.trace is None:
            return
        name = self.kernels.item(rows[0].row(), 0).text()
        self.show_distribution(name)

    def show_distribution(self, name: str) -> np.ndarray:
        """Histogram of one kernel's (or node's) durations."""
        assert self.trace is not None
        trace = self.trace
        if name not in trace.names:
            return np.zeros(0)
        name_id = trace.names.index(name)
        mask = (trace.name == name_id) & member(trace.kind, (KIND["kernel"], KIND["ort_node"]))
        durations = trace.dur[mask].astype(np.float64) / 1e9
        plot = self.histogram_box.plot  # made now if its tab was never painted
        plot.clear()
        if durations.size:
            counts, edges = np.histogram(durations, bins=min(60, max(durations.size // 3, 5)))
            plot.plot(edges, counts, stepMode="center", fillLevel=0, brush=(66, 133, 244, 120))
            plot.setTitle(f"{name[:60]} — {durations.size:,} launches")
            plot.enableAutoRange()
            plot.autoRange()  # a new kernel's durations are another scale
        return counts if durations.size else np.zeros(0)

    def _fill_kernels(self, rows: list[KernelRow]) -> None:
        self.kernels.setSortingEnabled(False)
        self.kernels.setRowCount(len(rows))
        for r, row in enumerate(rows):
            name = QTableWidgetItem(row.name)
            name.setToolTip(row.name)  # the whole name; the cell elides its middle
            self.kernels.setItem(r, 0, name)
            for c, (key, _) in enumerate(KERNEL_COLUMNS[1:], start=1):
                value = float(getattr(row, key))  # a KernelRow field: KERNEL_COLUMNS names them
                if key == "count":
                    text = f"{int(value):,}"
                elif key.endswith("_us"):
                    text = duration_text(value)  # units that fit: the column reads whole
                else:
                    text = f"{value:.1f}"
                item = NumberItem(value, text=text)
                self.kernels.setItem(r, c, item)
        self.kernels.setSortingEnabled(True)
        total = next(c for c, (key, _) in enumerate(KERNEL_COLUMNS) if key == "total_us")
        self.kernels.sortItems(total, Qt.SortOrder.DescendingOrder)  # where the time goes
        self._fit_kernels()
        if rows:  # the heaviest kernel's histogram, not a blank plot
            self.kernels.selectRow(0)

    def _fit_kernels(self) -> None:
        """The numbers on screen and the name as wide as it can be (its middle elided beyond):
        names were squeezed to ~50 px at every size."""
        names = [self.kernels.item(r, 0).text() for r in range(min(self.kernels.rowCount(), 2000))]
        # Numbers never elide (the sorted Total read "174....78"): each numeric column keeps its
        # content's width and the name column gives up the room, down to its own floor.
        floor = {c: self.kernels.sizeHintForColumn(c) for c in range(1, len(KERNEL_COLUMNS))}
        fit_columns(self.kernels, stretch=0, floor={0: name_floor(self.kernels, names), **floor})

    # -- range -----------------------------------------------------------------------------------
    def select_range(self, t0: int, t1: int) -> TraceStats | None:
        """Statistics of [t0, t1], events clipped to the range: at once for a short range, on a
        thread for a long one (returns None then; ``range_view`` fills in when done)."""
        if self.index is None:
            return None
        rows = self.index.in_range(t0, t1)
        self.tabs.setCurrentWidget(self.range_view)
        trace = self.index.trace

        def compute() -> TraceStats:
            stats = trace_stats(trace.take(rows, clip=(t0, t1)))
            stats.range_ns = (t0, t1)
            return stats

        if rows.size <= SYNC_RANGE_EVENTS:
            self._on_range(trace, compute())
            return self.range_stats
        self.range_stats = None
        self.range_view.setHtml(f"<i>Computing statistics of {rows.size:,} events …</i>")
        self.range_task = BackgroundTask(compute, self)
        self.range_task.sig_done.connect(lambda stats: self._on_range(trace, stats))
        self.range_task.sig_failed.connect(self._on_stats_failed)
        self.range_task.start()
        return None

    def _on_range(self, trace: Trace, stats: TraceStats) -> None:
        if trace is not self.trace or stats.range_ns is None:
            return
        self.range_stats = stats
        t0, t1 = stats.range_ns
        self.range_view.setHtml(
            f"<b>Range {format_ns(t1 - t0)}</b> ({stats.events:,} events)<br>"
            + summary_html(stats, top=10)
        )

    # -- export ----------------------------------------------------------------------------------
    def choose_chrome_export(self) -> None:
        if self.trace is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export Chrome trace", "", "JSON (*.json)")
        if path:
            self.export_chrome(path)

    def export_chrome(self, path: str) -> BackgroundTask:
        """On a thread: a million events take seconds to format."""
        assert self.trace is not None
        trace = self.trace
        self.sig_message.emit(f"Writing {Path(path).name} …")
        task = BackgroundTask(lambda: write_chrome(trace, path), self)
        task.sig_done.connect(
            lambda written: self.sig_message.emit(
                f"Wrote {written} (opens in Perfetto / chrome://tracing)"
            )
        )
        task.sig_failed.connect(lambda exc, _: self.sig_message.emit(f"Export failed: {exc}"))
        self.export_task = task
        return task.start()

    def choose_csv_export(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder for the CSV tables")
        if folder:
            self.export_csv(folder)

    def export_csv(self, folder: str) -> list[Path]:
        tables = self.stats.tables() if self.stats else {}
        if self.range_stats:
            tables["range_kernels"] = self.range_stats.tables()["kernels"]
        written = [write_csv(rows, Path(folder) / f"{name}.csv") for name, rows in tables.items()]
        self.sig_message.emit(f"Wrote {len(written)} CSV tables to {folder}")
        return written

    def choose_png_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the view", "", "PNG (*.png)")
        if path:
            self.export_png(path)

    def export_png(self, path: str) -> Path:
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        self.grab().save(buffer, "PNG")
        atomic_write_bytes(path, bytes(buffer.data().data()))
        return Path(path)


def _histogram_axes(_pg: Any, plot: Any) -> None:
    plot.setLabel("bottom", "duration", units="s")
    plot.setLabel("left", "count")
