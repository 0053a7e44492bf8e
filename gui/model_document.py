"""The open document: a model (and its project, if any), opened through a worker job."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from deploylens.core.errors import ProjectFileError
from deploylens.core.model.request import InspectRequest
from deploylens.core.model.summary import ModelSummary
from deploylens.core.project import PROJECT_SUFFIX, Project, load_project
from deploylens.core.worker.client import JobFailure
from deploylens.gui.job_manager import JobManager
from deploylens.gui.worker_client import WorkerJob

ONNX_SUFFIXES = (".onnx", ".onnxtxt")


def is_project_file(path: Path) -> bool:
    return path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".toml"


class ModelDocument(QObject):
    sig_loading = Signal(str)  # path
    sig_opened = Signal(object)  # ModelSummary
    sig_failed = Signal(object)  # JobFailure (or a ProjectFileError wrapped in one)

    def __init__(self, manager: JobManager, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.project = Project()
        self.model_path: Path | None = None
        self.summary: ModelSummary | None = None
        self.job: WorkerJob | None = None

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

    def _open_model(self, path: Path) -> None:
        if self.job is not None and self.job.active:
            self.job.cancel()
        self.model_path = path
        self.sig_loading.emit(str(path))
        job = self.manager.submit_request(InspectRequest(str(path)), f"Open {path.name}")
        self.job = job
        # Answers of a job that a newer open replaced are dropped, not shown.
        job.sig_finished.connect(lambda payload: self._on_summary(job, payload))
        job.sig_failed.connect(lambda failure: job is self.job and self.sig_failed.emit(failure))

    def _on_summary(self, job: WorkerJob, payload: dict) -> None:
        if job is not self.job:
            return
        self.summary = ModelSummary.from_dict(payload)
        self.sig_opened.emit(self.summary)

    def save_project(self, path: str | Path) -> Path:
        self.project.model_path = self.model_path
        return self.project.save(path)
