"""The Timeline's capture dialogs: Profile (one capture: backend, mode, batch, streams, host
memory, warm-up), Sweep (every batch × streams × mode point: a table and a throughput-vs-latency
plot whose points open their traces) — views that fill ``ProfileRequest`` / ``SweepRequest``."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.trace.pipeline import MODES, Mode
from deploylens.core.trace.request import (
    BACKENDS,
    Backend,
    Executor,
    Host,
    ProfileRequest,
    SweepRequest,
    _int_list,
    _mode_list,
)
from deploylens.core.trace.result import SweepPoint, SweepResult
from deploylens.gui.common.choices import word
from deploylens.gui.common.lazy_plot import LazyPlot

MODE_COLOURS = {"serial": "#1f77b4", "pipelined": "#2ca02c", "cudagraph": "#d62728",
                "graph-pipelined": "#9467bd"}  # fmt: skip


def _spin(value: int, low: int = 1, high: int = 100_000) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box


class CaptureForm(QWidget):
    """The fields a profile and a sweep share; the sweep takes lists where a profile takes one."""

    def __init__(self, model: str, sweep: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sweep = sweep
        self.model = QLineEdit(model)
        self.model.setToolTip("ort: FILE.onnx; torch: an export spec (torchvision:NAME, …)")
        self.backend = QComboBox()
        self.backend.addItems(BACKENDS)
        self.backend.setCurrentText("ort" if model.endswith(".onnx") else "torch")
        self.mode = QLineEdit("serial") if sweep else QComboBox()
        if isinstance(self.mode, QComboBox):
            self.mode.addItems(MODES)
        self.batch = QLineEdit("1,8,32") if sweep else _spin(1)
        self.streams = QLineEdit("1,2") if sweep else _spin(1, 1, 64)
        self.host_buffers = QComboBox()
        self.host_buffers.addItems(["pinned", "pageable"])
        self.warmup = _spin(5, 0)
        self.iterations = _spin(20)
        form = QFormLayout(self)
        form.addRow("Model", self.model)
        form.addRow("Backend", self.backend)
        form.addRow("Mode" + (" (list)" if sweep else ""), self.mode)
        form.addRow("Batch" + (" (list)" if sweep else ""), self.batch)
        form.addRow("Streams" + (" (list)" if sweep else ""), self.streams)
        form.addRow("Host buffers", self.host_buffers)
        form.addRow("Warm-up batches", self.warmup)
        form.addRow("Timed batches", self.iterations)
        self.executor = QComboBox()
        self.executor.addItems(["auto", "ray", "worker"])
        self.executor.setToolTip(
            "ray: each point a Ray task (a GPU each for GPU points); worker: one after another; "
            "auto: Ray where the worker's interpreter has it (pip install 'deploylens[cluster]')"
        )
        self.ray_address = QLineEdit()
        self.ray_address.setPlaceholderText("none: Ray here")
        self.ray_address.setToolTip(
            "a running Ray cluster, host:port (default: Ray on the worker's machine)"
        )
        if sweep:
            form.addRow("Run points on", self.executor)
            form.addRow("Ray cluster", self.ray_address)

    def _loop(self) -> dict[str, Any]:
        """The capture loop's fields (``CaptureLoop``), the same in both forms."""
        return {
            "host_buffers": word(self.host_buffers.currentText(), Host),
            "warmup": self.warmup.value(),
            "iterations": self.iterations.value(),
        }

    def profile_request(self, out: str) -> ProfileRequest:
        assert isinstance(self.mode, QComboBox) and isinstance(self.batch, QSpinBox)
        assert isinstance(self.streams, QSpinBox)
        request = ProfileRequest(
            self.model.text().strip(), out, backend=word(self.backend.currentText(), Backend),
            mode=word(self.mode.currentText(), Mode), batch=self.batch.value(),
            streams=self.streams.value(), **self._loop(),
        )  # fmt: skip
        request.check()
        return request

    def sweep_request(self, out: str) -> SweepRequest:
        assert isinstance(self.mode, QLineEdit) and isinstance(self.batch, QLineEdit)
        assert isinstance(self.streams, QLineEdit)
        return SweepRequest(
            self.model.text().strip(), out, backend=word(self.backend.currentText(), Backend),
            batches=_int_list(self.batch.text()), streams=_int_list(self.streams.text()),
            modes=_mode_list(self.mode.text()), **self._loop(),
            executor=word(self.executor.currentText(), Executor),
            ray_address=self.ray_address.text().strip(),
        )  # fmt: skip


class CaptureDialog(QDialog):
    """Asks for a profile or a sweep; ``request`` is what the panel submits."""

    def __init__(self, model: str, sweep: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Sweep" if sweep else "Profile")
        self.form = CaptureForm(model, sweep, self)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addWidget(buttons)

    def request(self, out: str) -> ProfileRequest | SweepRequest:
        """Raises ``UserError`` for a list or number the capture cannot use."""
        if self.form.sweep:
            return self.form.sweep_request(out)
        return self.form.profile_request(out)


class SweepView(QWidget):
    """A sweep's points: a table (skipped and failed points with their reasons) and the
    throughput-vs-latency plot; a row or a point opens that point's trace."""

    sig_open_trace = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.points: list[SweepPoint] = []
        self.table = QTableWidget(0, 7)
        self.table.setHorizontalHeaderLabels(
            ["mode", "streams", "batch", "median ms", "samples/s", "pattern", "status / reason"]
        )
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.cellDoubleClicked.connect(lambda row, _: self._open(row))
        self.scatter: Any = None  # made with the plot (``_plot_items``)
        self.plot_box = LazyPlot(self._plot_items)  # pyqtgraph: imported when first painted
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.plot_box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

    def _plot_items(self, pg: Any, plot: Any) -> None:
        plot.setLabel("bottom", "throughput (samples/s)")
        plot.setLabel("left", "median latency (ms)")
        self.scatter = pg.ScatterPlotItem(size=11)
        self.scatter.sigClicked.connect(self._on_point)
        plot.addItem(self.scatter)

    def start(self) -> None:
        """A sweep was submitted: empty table, rows arrive as points finish (``add_point``)."""
        self.points = []
        self.table.setRowCount(0)
        if self.plot_box.built:
            self.scatter.setData([])

    def add_point(self, point: SweepPoint) -> None:
        """One finished point, as the worker (or Ray) hands it over; the final result
        replaces the whole table in its order."""
        self.points.append(point)
        self._fill()

    def add_data(self, data: Any) -> None:
        """A progress message's ``data``: a finished point, read as strictly as the result."""
        try:
            self.add_point(typed.from_dict(SweepPoint, data.get("point"), "a sweep point"))
        except (UserError, AttributeError):
            pass  # an early piece that does not fit is left out: the result carries every point

    def show_result(self, result: SweepResult) -> None:
        self.points = list(result.points)
        self._fill()

    def _fill(self) -> None:
        import pyqtgraph as pg  # imported by the plot below, if not before

        _ = self.plot_box.plot  # the scatter is made with it
        self.table.setRowCount(len(self.points))
        spots = []
        for row, point in enumerate(self.points):
            ok = point.status == "ok"
            status = "ok" if ok else f"{point.status}: {point.reason}"
            if ok and point.attempts > 1:
                status = f"ok after {point.attempts} tries: {point.reason}"
            cells = [
                point.mode, str(point.streams), str(point.batch),
                f"{point.latency_ms_median or 0.0:.3f}" if ok else "",
                f"{point.throughput_per_s or 0.0:.1f}" if ok else "",
                point.pattern or "", status,
            ]  # fmt: skip
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
            if ok:
                position = (point.throughput_per_s or 0.0, point.latency_ms_median or 0.0)
                brush = pg.mkBrush(MODE_COLOURS.get(point.mode, "#444"))
                spots.append({"pos": position, "brush": brush, "data": row})
        self.scatter.setData(spots)
        self.table.resizeColumnsToContents()

    def _on_point(self, _item: Any, spots: Any) -> None:
        if len(spots):
            self._open(int(spots[0].data()))

    def _open(self, row: int) -> None:
        point = self.points[row] if 0 <= row < len(self.points) else None
        if point is not None and point.trace:
            self.sig_open_trace.emit(point.trace)


def check_request(dialog: CaptureDialog, out: str) -> tuple[Any, str]:
    """(request, "") or (None, the sentence saying what is wrong)."""
    try:
        return dialog.request(out), ""
    except UserError as exc:
        return None, exc.message
