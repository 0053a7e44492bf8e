"""Run worker jobs with ``QProcess``: the GUI never blocks on a job and survives its crash.

Protocol state and failure wording come from ``core/worker/client.py``, shared with the CLI.
One process per job: a crash or a kill never takes another job with it. With a remote host
(Preferences), the process is ``ssh``; sending the code and the job's inputs before it starts
and fetching its outputs after run in a thread, so the window never waits on the network.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from deploylens.core.errors import UserError
from deploylens.core.jobs import CANCEL_GRACE_S, TERMINATE_GRACE_S
from deploylens.core.results import typed_result
from deploylens.core.worker import protocol
from deploylens.core.worker.client import DISCONNECTED, START_FAILED, JobFailure, WorkerSession
from deploylens.core.worker.launch import new_workdir, remove_workdir, worker_argv, worker_env

_ids = itertools.count(1)

STARTING, RUNNING, DONE, FAILED, CANCELLING = "starting", "running", "done", "failed", "cancelling"


ResultT = TypeVar("ResultT")


class WorkerJob(QObject, Generic[ResultT]):
    """One job in its own worker process, reporting through signals on the GUI thread.
    Generic in the job's result: ``JobManager.submit_request(request)`` hands back a
    ``WorkerJob[R]`` for a ``Request[R]``, and ``on_finished`` checks a panel's handler against
    ``R`` (``sig_finished`` itself carries ``object``: Qt signals are untyped)."""

    sig_progress = Signal(object, str)  # fraction (or None), text
    sig_log = Signal(str, str)  # level, text
    sig_hello = Signal(object)  # the handshake message
    sig_finished = Signal(object)  # payload
    sig_failed = Signal(object)  # JobFailure
    sig_state = Signal(str)
    sig_data = Signal(object)  # a piece of the result sent early (a sweep's finished point)
    _sig_step = Signal(object, object)  # (what to do next on the GUI thread, its value)

    def __init__(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        python: str | None = None,
        title: str = "",
        parent: QObject | None = None,
        host: str = "",
        remote_python: str = "python3",
    ) -> None:
        super().__init__(parent)
        self.id = f"g{next(_ids)}"
        self.method = method
        self.params = params or {}
        self.title = title or method
        self.workdir: str | None = None  # made at start, removed once the process is gone
        self.host = host
        self.argv = worker_argv(python) if not host else ["ssh"]
        self.session = WorkerSession(remote_python if host else self.argv[0], host)
        self.remote_files: Any = None  # core.worker.transfer.RemoteFiles of a remote job
        self.retried = False  # a dropped connection is tried once more
        self._request_params = self.params
        self._sig_step.connect(self._on_step)
        self.state = STARTING
        self.started_at = time.monotonic()
        self.ended_at: float | None = None
        self.fraction: float | None = None
        self.failure: JobFailure | None = None
        self.payload: Any = None
        self.process = self._new_process()
        self.run_sent = False  # the run message: with a local start, else after the hello

    def _new_process(self) -> QProcess:
        process = QProcess(self)
        process.readyReadStandardOutput.connect(self._on_stdout)
        process.readyReadStandardError.connect(self._on_stderr)
        process.finished.connect(self._on_finished)
        process.errorOccurred.connect(self._on_error)
        return process

    def on_finished(self, handler: Callable[[ResultT], object]) -> None:
        """Call ``handler`` with the job's typed result when it finishes (on the GUI thread)."""
        self.sig_finished.connect(handler)

    # -- control -------------------------------------------------------------------------------
    def start(self) -> None:
        self.started_at = time.monotonic()
        if self.host:  # code and inputs first, off the GUI thread; the process after
            self.sig_progress.emit(None, f"connecting to {self.host}")
            self._in_thread(self._prepare_remote, self._launch)
            return
        self._launch(None)

    def _launch(self, prepared: Any) -> None:
        if self.state != STARTING:  # cancelled while the inputs were on their way
            return
        if prepared is not None:
            self.argv, self.params = prepared
        self.workdir = new_workdir()
        environment = QProcessEnvironment()
        for key, value in worker_env(self.workdir).items():
            environment.insert(key, value)
        self.process.setProcessEnvironment(environment)
        self.process.start(self.argv[0], self.argv[1:])
        if not self.host:
            # our own code in a local process speaks our protocol: the job goes with the start,
            # not after a round trip through the event loop (the hello is still checked)
            self._send(protocol.run(self.id, self.method, self.params))
            self.run_sent = True

    def flush(self, timeout_ms: int = 2000) -> bool:
        """Hand what was written to the process now, not when the event loop next runs (a job
        started before the window exists: ``app.open_early``)."""
        return self.process.waitForStarted(timeout_ms) and self.process.waitForBytesWritten(
            timeout_ms
        )

    # -- remote: the slow steps in a thread, their answers back on the GUI thread --------------
    def _in_thread(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        def run() -> None:
            step: Callable[[Any], None]
            try:
                value = work()
            except JobFailure as failure:
                step, value = self._end, failure
            except Exception as exc:  # a bug in the transfer: said, never a dead window
                step, value = self._end, JobFailure("internal", f"{exc}")
            else:
                step = then
            try:
                self._sig_step.emit(step, value)
            except RuntimeError:  # the job (its window) is gone: nobody is left to tell
                pass

        threading.Thread(target=run, name=f"deploylens-{self.id}", daemon=True).start()

    def _on_step(self, then: Callable[[Any], None], value: Any) -> None:
        then(value)

    def _prepare_remote(self) -> tuple[list[str], dict[str, Any]]:
        from deploylens.core.job_table import request_files
        from deploylens.core.jobs import remote_failure_kind
        from deploylens.core.results import result_files
        from deploylens.core.worker.remote import Host, RemoteError, ensure_code, remote_worker_argv
        from deploylens.core.worker.transfer import RemoteFiles

        try:
            host = Host.parse(self.host)
        except ValueError as exc:  # a hand-edited settings file: said with the host's name
            raise JobFailure(
                "address",
                f"The remote host {self.host!r} is not usable: {exc}.",
                "Fix it in Edit → Preferences (or clear it: jobs then run on this machine).",
            ) from None

        def progress(fraction: float | None, text: str) -> None:
            if self.state == CANCELLING:
                raise JobFailure(protocol.CANCELLED, "cancelled")
            self.sig_progress.emit(fraction, text)

        try:
            remote_worker_argv(host, self.session.python, "")  # a hostile path: said first
            code, _ = ensure_code(host)
            params = self.params
            files = request_files(self.method)
            if files:
                self.remote_files = RemoteFiles(host, files, progress, result_files(self.method))
                params = self.remote_files.send(params)
            return remote_worker_argv(host, self.session.python, code), params
        except RemoteError as exc:
            raise JobFailure(remote_failure_kind(exc), exc.message, exc.hint) from None

    def _fetch_remote(self, payload: Any) -> Any:
        try:
            return self.remote_files.fetch(payload)
        finally:
            self.remote_files.clean()

    def cancel_unstarted(self) -> None:
        """End a job that never got a process (its window is closing)."""
        self._end(JobFailure(protocol.CANCELLED, "cancelled: DeployLens is closing"))

    def cancel(self) -> None:
        """Ask politely, then terminate, then kill (DESIGN.md §4)."""
        if self.state in (DONE, FAILED, CANCELLING):
            return
        preparing = self.host and self.process.state() == QProcess.ProcessState.NotRunning
        self._set_state(CANCELLING)
        if preparing:  # no process yet: the sending thread stops at its next block
            self._end(JobFailure(protocol.CANCELLED, "cancelled"))
            return
        if self.process.state() == QProcess.ProcessState.Running:
            self._send(protocol.cancel(self.id))
        QTimer.singleShot(int(CANCEL_GRACE_S * 1000), self._terminate_if_alive)
        QTimer.singleShot(int((CANCEL_GRACE_S + TERMINATE_GRACE_S) * 1000), self._kill_if_alive)

    def elapsed(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started_at

    @property
    def active(self) -> bool:
        return self.state in (STARTING, RUNNING, CANCELLING)

    def wait_done(self, timeout_ms: int = 30000) -> bool:
        """Block until the process ended (tests and shutdown only, never on a user action)."""
        if self.process.state() == QProcess.ProcessState.NotRunning:
            return True
        if self.process.state() == QProcess.ProcessState.Starting:
            # waitForFinished returns False at once while the process is still starting, and a
            # kill then has nothing to kill: a job closed right after submit outlived its window
            self.process.waitForStarted(timeout_ms)
        return self.process.waitForFinished(timeout_ms)

    # -- plumbing -------------------------------------------------------------------------------
    def _terminate_if_alive(self) -> None:
        if self.process.state() != QProcess.ProcessState.NotRunning:
            self.process.terminate()

    def _kill_if_alive(self) -> None:
        if self.process.state() != QProcess.ProcessState.NotRunning:
            self.process.kill()

    def _send(self, message: dict[str, Any]) -> None:
        self.process.write(protocol.encode(message))

    def _set_state(self, state: str) -> None:
        self.state = state
        self.sig_state.emit(state)

    def _retry_after_drop(self, failure: JobFailure) -> bool:
        """A remote job whose connection dropped starts once more (its code and the inputs
        that arrived are on the host; a cut-off send resumes); True when it did."""
        if failure.kind != DISCONNECTED or not self.host or self.retried:
            return False
        if self.state not in (STARTING, RUNNING):
            return False
        self.retried = True
        self.sig_log.emit("warning", f"{failure.message} Trying once more.")
        self.sig_progress.emit(None, f"the connection to {self.host} dropped: trying once more")
        old, self.process = self.process, self._new_process()
        old.blockSignals(True)  # its late signals belong to the dropped attempt
        if old.state() != QProcess.ProcessState.NotRunning:
            old.kill()
        remove_workdir(self.workdir)
        if self.remote_files is not None:
            threading.Thread(target=self.remote_files.clean, daemon=True).start()
            self.remote_files = None
        self.session = WorkerSession(self.session.python, self.host)
        self.run_sent = False
        self.params = self._request_params
        self._set_state(STARTING)
        QTimer.singleShot(500, self.start)
        return True

    def _end(self, failure: JobFailure | None, payload: Any = None) -> None:
        if self.state in (DONE, FAILED):
            return
        if failure is not None and self._retry_after_drop(failure):
            return
        self.ended_at = time.monotonic()
        # the worker is told to go before anyone hears the answer: a handler that shuts the
        # app's jobs down (closing the window on a result) waited its whole timeout for a
        # worker that had not been told yet
        if self.process.state() == QProcess.ProcessState.Running:
            self._send(protocol.shutdown())
            self.process.closeWriteChannel()
            QTimer.singleShot(3000, self._kill_if_alive)
        if failure is None:
            self.payload = payload
            self._set_state(DONE)
            self.sig_finished.emit(payload)
        else:
            self.failure = failure
            self._set_state(FAILED)
            self.sig_failed.emit(failure)
            if self.remote_files is not None:  # the host's scratch folder goes, off the thread
                threading.Thread(target=self.remote_files.clean, daemon=True).start()

    def _fetched(self, payload: Any) -> None:
        self._end(None, payload)

    def _typed(self, payload: Any) -> Any:
        """The worker's JSON as the job's typed result, checked (core/results.py). It runs in
        a thread: a 100k-node model's inferred shapes take a second to check, which the
        window must not wait for."""
        try:
            return typed_result(self.method, payload)
        except UserError as exc:
            raise JobFailure(protocol.INTERNAL, str(exc)) from None

    def _on_stderr(self) -> None:
        self.session.feed_stderr(bytes(self.process.readAllStandardError().data()))

    def _on_stdout(self) -> None:
        for message in self.session.feed_stdout(bytes(self.process.readAllStandardOutput().data())):
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "hello":
            try:
                self.session.accept_hello(message)
            except JobFailure as failure:
                self._end(failure)
                self.process.kill()
                return
            self.sig_hello.emit(message)
            if self.state == CANCELLING:
                self._end(JobFailure(protocol.CANCELLED, "cancelled"))
                return
            self._set_state(RUNNING)
            if not self.run_sent:
                self._send(protocol.run(self.id, self.method, self.params))
                self.run_sent = True
        elif message.get("job") not in (self.id, None):
            return
        elif kind == "progress":
            self.fraction = message.get("fraction")
            self.sig_progress.emit(self.fraction, str(message.get("text", "")))
            if "data" in message:
                self.sig_data.emit(message["data"])
        elif kind == "log":
            self.sig_log.emit(str(message.get("level")), str(message.get("text")))
        elif kind == "result" and self.remote_files is not None:
            self.sig_progress.emit(None, f"copying the outputs back from {self.host}")
            payload = message.get("payload")
            self._in_thread(lambda: self._typed(self._fetch_remote(payload)), self._fetched)
        elif kind == "result":
            payload = message.get("payload")
            self._in_thread(lambda: self._typed(payload), self._fetched)
        elif kind == "error" and message.get("job") == self.id:
            self._end(self.session.failure_from_error(message))

    def _on_finished(self, exit_code: int, exit_status: QProcess.ExitStatus) -> None:
        self._on_stderr()
        self._on_stdout()
        remove_workdir(self.workdir)
        if self.state in (DONE, FAILED):
            return
        if self.state == CANCELLING:
            self._end(JobFailure(protocol.CANCELLED, "cancelled"))
            return
        # On Unix, Qt reports the terminating signal as the exit code of a crashed process.
        returncode = -exit_code if exit_status == QProcess.ExitStatus.CrashExit else exit_code
        self._end(self.session.failure_from_exit(returncode, self.method))

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            remove_workdir(self.workdir)
            self._end(
                JobFailure(
                    START_FAILED,
                    f"Could not start the worker interpreter {self.argv[0]}: "
                    f"{self.process.errorString()}.",
                    "Pick an existing Python interpreter in Preferences → Worker interpreter.",
                )
            )
