"""Jobs/Log dock: one row per job with progress, elapsed time and cancel; the log below."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QHeaderView,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.columns import compact_rows
from deploylens.gui.job_manager import JobManager
from deploylens.gui.worker_client import WorkerJob

COLUMNS = ("Job", "Status", "Progress", "Time", "")
NARROW = 330  # below this table width the Status column hides (the Job name kept < 90 px)


class JobsPanel(QWidget):
    def __init__(self, manager: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.rows: dict[str, int] = {}
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setMinimumSectionSize(24)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        for column in (2, 3, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(1, 90)
        self.table.setColumnWidth(2, 64)
        self.table.setColumnWidth(3, 52)
        self.table.setColumnWidth(4, 28)  # a ✕ button: the column fits a narrow left column
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setWordWrap(False)
        compact_rows(self.table)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.log)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self._clock = QTimer(self)
        self._clock.setInterval(250)
        self._clock.timeout.connect(self._tick)
        manager.sig_job_added.connect(self.add_job)
        for job in manager.jobs:  # submitted before this panel was made (``app.open_early``)
            self.add_job(job)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.table.setColumnHidden(1, self.table.width() < NARROW)  # a name, not "…", in 260 px

    def add_job(self, job: WorkerJob) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.rows[job.id] = row
        title = QTableWidgetItem(job.title)
        title.setToolTip(job.title)
        self.table.setItem(row, 0, title)
        self.table.setItem(row, 1, QTableWidgetItem("starting"))
        bar = QProgressBar()
        bar.setRange(0, 0)  # busy until the first fraction arrives
        self.table.setCellWidget(row, 2, bar)
        self.table.setItem(row, 3, QTableWidgetItem("0.0 s"))
        cancel = QPushButton("✕")
        cancel.setToolTip(f"Cancel {job.title}")
        cancel.clicked.connect(job.cancel)
        self.table.setCellWidget(row, 4, cancel)
        job.sig_state.connect(lambda state, j=job: self._on_state(j, state))
        job.sig_progress.connect(lambda fraction, text, j=job: self._on_progress(j, fraction, text))
        job.sig_log.connect(
            lambda level, text, j=job: self.append_log(f"[{j.title}] {level}: {text}")
        )
        job.sig_failed.connect(lambda failure, j=job: self._on_failed(j, failure))
        self.append_log(f"[{job.title}] started ({job.method})")
        self._clock.start()

    def append_log(self, text: str) -> None:
        self.log.appendPlainText(time.strftime("%H:%M:%S ") + text)

    def bar(self, job: WorkerJob) -> QProgressBar:
        return self.table.cellWidget(self.rows[job.id], 2)  # type: ignore[return-value]

    def _on_progress(self, job: WorkerJob, fraction: float | None, text: str) -> None:
        bar = self.bar(job)
        if fraction is None:
            bar.setRange(0, 0)
        else:
            bar.setRange(0, 1000)
            bar.setValue(int(max(0.0, min(1.0, fraction)) * 1000))
        if text:
            self.table.item(self.rows[job.id], 1).setText(text)
            self.table.item(self.rows[job.id], 1).setToolTip(text)

    def _on_state(self, job: WorkerJob, state: str) -> None:
        row = self.rows[job.id]
        self.table.item(row, 1).setText(state)
        if not job.active:
            bar = self.bar(job)
            bar.setRange(0, 1000)
            bar.setValue(1000 if state == "done" else bar.value())
            if state != "done":  # failed / cancelled reads in the bar when Status is hidden
                bar.setFormat(state)
            bar.setToolTip(self.table.item(row, 1).toolTip() or state)
            self.table.cellWidget(row, 4).setEnabled(False)
            self.table.item(row, 3).setText(f"{job.elapsed():.1f} s")
            self.append_log(f"[{job.title}] {state} after {job.elapsed():.2f} s")

    def _on_failed(self, job: WorkerJob, failure: JobFailure) -> None:
        status = self.table.item(self.rows[job.id], 1)
        status.setText(f"{failure.kind}: {failure.message}")
        status.setToolTip(f"{failure.kind}: {failure.message}")
        self.bar(job).setToolTip(f"{failure.kind}: {failure.message}")
        self.bar(job).setFormat(failure.kind)  # "cancelled", "crashed" … when Status is hidden
        self.append_log(f"[{job.title}] {failure.kind}: {failure}")

    def _tick(self) -> None:
        running = [job for job in self.manager.jobs if job.active]
        for job in running:
            self.table.item(self.rows[job.id], 3).setText(f"{job.elapsed():.1f} s")
        if not running:
            self._clock.stop()
