"""Starts worker jobs for the panels and keeps the list the Jobs dock shows."""

from __future__ import annotations

from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from deploylens.core.requests import Request
from deploylens.core.settings import AppSettings
from deploylens.gui.worker_client import WorkerJob

ResultT = TypeVar("ResultT")


class JobManager(QObject):
    sig_job_added = Signal(object)  # WorkerJob

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.jobs: list[WorkerJob] = []
        self.closed = False  # after shutdown nothing starts a worker

    def worker_python(self) -> str | None:
        """The interpreter chosen in Preferences, or None for the app's own."""
        return AppSettings.load().worker_python or None

    def submit(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        title: str = "",
        python: str | None = None,
        remote: str | None = None,
        remote_python: str | None = None,
    ) -> WorkerJob[Any]:
        """Start ``method`` in a worker: on the Preferences' remote host unless ``remote`` says
        otherwise ("" : here; Preferences' check asks a host that is not saved yet) or the job
        reads the model here (``Job.here``: opening a model never depends on the host)."""
        from deploylens.core.job_table import JOBS

        settings = AppSettings.load()
        host = settings.remote_host if remote is None else remote
        if remote is None and method in JOBS and JOBS[method].here:
            host = ""
        job: WorkerJob[Any] = WorkerJob(
            method,
            params,
            python or settings.worker_python or None,
            title,
            parent=self,
            host=host,
            remote_python=remote_python or settings.remote_python or "python3",
        )
        self.jobs.append(job)
        self.sig_job_added.emit(job)
        if self.closed:
            # A late answer (a graph laid out after the window closed) must not start a worker
            # that nothing will stop: it outlived its window.
            job.cancel_unstarted()
        else:
            job.start()
        return job

    def submit_request(
        self, request: Request[ResultT], title: str = "", python: str | None = None
    ) -> WorkerJob[ResultT]:
        """Submit a typed request (``core.requests``): its job with its params; the handle
        carries the request's result type, so ``on_finished`` handlers are checked."""
        job: WorkerJob[ResultT] = self.submit(request.JOB, request.to_params(), title, python)
        return job

    def active(self) -> list[WorkerJob]:
        return [job for job in self.jobs if job.active]

    def shutdown(self, timeout_ms: int = 3000) -> None:
        """Cancel what still runs and make sure no worker outlives the window."""
        self.closed = True
        for job in self.active():
            job.cancel()
        for job in self.jobs:
            if not job.wait_done(timeout_ms):
                job.process.kill()
                job.wait_done(1000)
