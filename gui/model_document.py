"""The open document: a model (and its project, if any), opened through a worker job, then
parsed once in this process for every panel that reads the protobuf (graph view, op support)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from deploylens.core.errors import ProjectFileError
from deploylens.core.model.loading import read_model
from deploylens.core.model.request import InspectRequest, inspect_request
from deploylens.core.model.summary import ModelSummary
from deploylens.core.project import PROJECT_SUFFIX, Project, load_project
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.background import BackgroundTask
from deploylens.gui.job_manager import JobManager
from deploylens.gui.worker_client import WorkerJob

ONNX_SUFFIXES = (".onnx", ".onnxtxt")


def is_project_file(path: Path) -> bool:
    return path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".toml"


class ModelDocument(QObject):
    sig_loading = Signal(str)  # path
    sig_opened = Signal(object)  # ModelSummary
    sig_failed = Signal(object)  # JobFailure (or a ProjectFileError wrapped in one)
    # path, message: the model's own open failed (not a project file that named it) — a graph
    # shown from the parse ahead of its summary must go
    sig_model_failed = Signal(str, str)
    # path, onnx.ModelProto — or None when this process could not parse what the worker read:
    # the panels then read it themselves and show their own error
    sig_parsed = Signal(str, object)
    # this process's parse, done before the worker's summary (sig_parsed follows the summary):
    # panels may start their own work on it now
    sig_parsed_ahead = Signal(str, object)
    # ModelSummary: the open's summary, its warnings now with the checker's findings (the
    # summary comes unchecked; ``add_findings``)
    sig_checked = Signal(object)

    def __init__(self, manager: JobManager, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.project = Project()
        self.model_path: Path | None = None
        self.summary: ModelSummary | None = None
        self.checking = False  # the summary's checker findings are still to come
        # findings that came before the summary they belong to: (open, path, findings)
        self.early_findings: tuple[int, str, list[str]] | None = None
        self.job: WorkerJob | None = None
        self.proto: Any = None  # the parsed model every panel shares (weights stay on disk)
        self.parses = 0  # how many times this process parsed a model (tests read it)
        self.opened = 0  # which open a late parse belongs to
        self.tasks: list[BackgroundTask] = []
        self.parsed: tuple[str, Any] | None = None
        self.parse_for: tuple[int, str] | None = None  # (open, path) the last parse started for

    def open(self, path: str | Path) -> None:
        """Open an ONNX model or a project; never blocks the GUI thread."""
        path = Path(path)
        if is_project_file(path):
            try:
                self.project = load_project(path)
            except ProjectFileError as exc:
                self.sig_failed.emit(JobFailure("user", exc.message, exc.hint))
                return
            if self.project.model_path is None:
                self.sig_failed.emit(JobFailure("user", f"{path.name} names no model yet."))
                return
            self._open_model(self.project.model_path)
        else:
            self.project = Project(model_path=path.resolve())
            self._open_model(path.resolve())

    def _on_failed(self, job: Any, failure: Any) -> None:
        if job is self.job:  # a newer open replaced it: its failure is not shown
            self.parsed = None  # a parse made ahead of a summary that failed is not shown
            self.sig_model_failed.emit(str(self.model_path), failure.message)
            self.sig_failed.emit(failure)

    def adopt(self, path: str | Path, job: WorkerJob) -> None:
        """Open the ONNX model ``path`` whose inspect ``job`` (``inspect_request``) was started
        before this document existed (``app.open_early``)."""
        path = Path(path).resolve()
        self.project = Project(model_path=path)
        self._open_model(path, job)

    def _open_model(self, path: Path, job: WorkerJob | None = None) -> None:
        if self.job is not None and self.job.active:
            self.job.cancel()
        self.model_path = path
        self.proto = None
        self.opened += 1
        self.sig_loading.emit(str(path))
        if job is None:
            job = self.manager.submit_request(*inspect_request(path))
        self.job = job
        self.summary = None
        self.checking = False
        self.early_findings = None
        self.parsed = None  # this process's parse when it finished before the summary
        # Answers of a job that a newer open replaced are dropped, not shown.
        job.sig_data.connect(lambda data: self._on_worker_parsed(job, data))
        job.on_finished(lambda payload: self._on_summary(job, payload))
        job.sig_failed.connect(lambda failure: self._on_failed(job, failure))

    def _on_worker_parsed(self, job: WorkerJob, data: Any) -> None:
        """The worker has parsed the file: parse ours now, while it checks and summarizes
        (the 100k-node model's graph waited ~0.7 s for that before)."""
        path = data.get(InspectRequest.PARSED) if isinstance(data, dict) else None
        if job is self.job and isinstance(path, str):
            self._parse(path)

    def _on_summary(self, job: WorkerJob, summary: ModelSummary) -> None:
        if job is not self.job:
            return
        self.summary = summary
        self.checking = True  # inspect_request's summary is unchecked
        self.sig_opened.emit(self.summary)
        early, self.early_findings = self.early_findings, None
        if early is not None and early[0] == self.opened:
            self.add_findings(early[1], early[2])
        if self.parsed is not None:  # ours finished first: the panels get it after the summary
            path, proto = self.parsed
            self.parsed = None
            self.sig_parsed.emit(path, proto)
        elif not self.parses_started(summary.path):
            self._parse(summary.path)  # a worker that sent no early word (an older one)

    def add_findings(self, path: str, findings: list[str]) -> None:
        """The checker's findings of ``path`` (the graph's shapes job): the open summary's
        warnings, as ``deploylens inspect`` gives them."""
        if self.summary is None and self.model_path is not None and str(self.model_path) == path:
            self.early_findings = (self.opened, path, findings)  # its summary is on its way
            return
        if self.summary is None or self.summary.path != path or not self.checking:
            return  # another model is open now
        self.checking = False
        self.summary.warnings.extend(findings)
        self.sig_checked.emit(self.summary)

    def parses_started(self, path: str) -> bool:
        return self.parse_for == (self.opened, path)

    def _parse(self, path: str) -> None:
        """One parse for all panels, off the UI thread, once the worker has parsed the file
        (a file that crashes the parser has already failed there, not here)."""
        self.parses += 1
        opened = self.opened
        self.parse_for = (opened, path)
        task = BackgroundTask(lambda: read_model(path), self)
        task.sig_done.connect(lambda proto: self._on_parsed(opened, path, proto))
        task.sig_failed.connect(lambda exc, details: self._on_parsed(opened, path, None))
        self.tasks = [t for t in self.tasks if t.worker.is_alive()] + [task]
        task.start()

    def _on_parsed(self, opened: int, path: str, proto: Any) -> None:
        if opened != self.opened:
            return  # a newer open replaced it
        self.proto = proto
        if self.summary is None:
            self.parsed = (path, proto)  # emitted after the summary, in the order panels expect
            if proto is not None:
                self.sig_parsed_ahead.emit(path, proto)
            return
        self.sig_parsed.emit(path, proto)

    def save_project(self, path: str | Path) -> Path:
        self.project.model_path = self.model_path
        return self.project.save(path)
