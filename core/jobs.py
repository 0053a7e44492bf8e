"""Run worker jobs with ``subprocess``: the CLI's and the tests' way to reach the worker.

The GUI does the same through ``QProcess`` (``gui/worker_client.py``); both share the protocol
state in ``core/worker/client.py``, so every failure reads the same in the CLI and in the GUI.
"""

from __future__ import annotations

import itertools
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploylens.core.job_table import JOBS, request_files
from deploylens.core.results import result_files, typed_result
from deploylens.core.worker import protocol
from deploylens.core.worker.client import DISCONNECTED, START_FAILED, JobFailure, WorkerSession
from deploylens.core.worker.launch import new_workdir, remove_workdir, worker_argv, worker_env

ProgressCallback = Callable[[float | None, str], None]

# Cancel: ask politely, then SIGTERM, then SIGKILL (DESIGN.md §4).
CANCEL_GRACE_S = 0.5
TERMINATE_GRACE_S = 1.0
HELLO_TIMEOUT_S = 60.0

_job_ids = itertools.count(1)

# Where workers run when the caller names none: ``deploylens --host user@server`` sets it.
REMOTE: dict[str, str] = {"host": "", "python": "python3"}


def use_remote(host: str, python: str = "python3") -> None:
    """Every worker this process starts runs on ``host`` over ssh (the CLI's --host)."""
    from deploylens.core.worker.remote import Host

    Host.parse(host)  # a malformed host is an error now, not at the first job
    REMOTE.update(host=host, python=python or "python3")


class Worker:
    """One worker process; runs jobs one after another and keeps its imports warm."""

    def __init__(self, python: str | None = None, host: str | None = None) -> None:
        self.host = REMOTE["host"] if host is None else host
        self.argv = worker_argv(python) if not self.host else []
        if self.host:  # the local interpreter setting means nothing on the host
            self.python = (python if host else None) or REMOTE["python"]
        else:
            self.python = self.argv[0]
        self.workdir: str | None = None
        self.session = WorkerSession(self.python, self.host)
        self.code_sent: bool | None = None  # remote: whether this start sent the code
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._process: subprocess.Popen[bytes] | None = None
        self._cancel_at: float | None = None
        self._terminated = False
        self._eofs = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = HELLO_TIMEOUT_S) -> dict[str, Any]:
        """Start the process and wait for its handshake; return the ``hello`` message."""
        self.workdir = new_workdir()
        self.env = worker_env(self.workdir)
        if self.host:
            self.argv = self._remote_argv()
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
            )
        except OSError as exc:
            remove_workdir(self.workdir)
            raise JobFailure(
                START_FAILED,
                f"Could not start the worker interpreter {self.argv[0]}: {exc.strerror or exc}.",
                "Pick an existing Python interpreter in Preferences → Worker interpreter.",
            ) from None
        threading.Thread(target=self._pump, args=("out",), daemon=True).start()
        threading.Thread(target=self._pump, args=("err",), daemon=True).start()
        deadline = time.monotonic() + timeout
        try:
            while self.session.hello is None:
                kind, value = self._next_event(deadline, "")
                if kind == "msg" and value.get("type") == "hello":
                    self.session.accept_hello(value)
        except JobFailure:  # no handshake, exited early, or a stale protocol
            self.kill()
            raise
        return self.session.hello

    def _remote_argv(self) -> list[str]:
        """Send the code if the host lacks this version, then the ssh line of the worker."""
        from deploylens.core.worker.remote import Host, RemoteError, ensure_code, remote_worker_argv

        host = Host.parse(self.host)
        try:
            remote_worker_argv(host, self.python, "")  # a hostile interpreter path: said first
            code, self.code_sent = ensure_code(host)
            return remote_worker_argv(host, self.python, code)
        except RemoteError as exc:
            remove_workdir(self.workdir)
            raise JobFailure(remote_failure_kind(exc), exc.message, exc.hint) from None

    def close(self) -> None:
        """Ask the worker to leave; make sure it is gone."""
        if self._process is None:
            return
        if self._process.poll() is None:
            try:
                self._send(protocol.shutdown())
                self._process.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self._process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipes()

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        """Called once the process is gone: its pipes and its scratch folder go too."""
        if self._process is None:
            return
        remove_workdir(self.workdir)
        for pipe in (self._process.stdin, self._process.stdout, self._process.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    # -- jobs ----------------------------------------------------------------------------------
    def run(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        on_progress: ProgressCallback | None = None,
        on_log: Callable[[str, str], None] | None = None,
        timeout: float | None = None,
        on_data: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run one job and return its payload, or raise ``JobFailure``. ``on_data`` gets the
        pieces of the result a job sends early (a sweep's points as they finish)."""
        if self.session.hello is None:
            self.start()
        job = f"j{next(_job_ids)}"
        self._current_job = job
        self._cancel_at = None
        self._send(protocol.run(job, method, params or {}))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            kind, message = self._next_event(deadline, method)
            if kind != "msg" or message.get("job") not in (job, None):
                continue
            mtype = message.get("type")
            if mtype == "progress" and on_progress is not None:
                on_progress(message.get("fraction"), str(message.get("text", "")))
            if mtype == "progress" and on_data is not None and "data" in message:
                on_data(message["data"])
            elif mtype == "log" and on_log is not None:
                on_log(str(message.get("level")), str(message.get("text")))
            elif mtype == "result":
                return message.get("payload")
            elif mtype == "error" and message.get("job") == job:
                raise self.session.failure_from_error(message)

    def run_request(self, request: Any, **kwargs: Any) -> Any:
        """Run a typed request (``core.requests``): its job with its params, answered by its
        typed result (``core.results``) where the job has one."""
        return typed_result(request.JOB, self.run(request.JOB, request.to_params(), **kwargs))

    def cancel(self) -> None:
        """Ask the running job to stop; the run loop escalates to terminate, then kill."""
        if self._cancel_at is not None:
            return
        self._cancel_at = time.monotonic()
        try:
            self._send(protocol.cancel(getattr(self, "_current_job", "")))
        except OSError:
            pass

    # -- plumbing ------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(protocol.encode(message))
        self._process.stdin.flush()

    def _pump(self, stream: str) -> None:
        assert self._process is not None
        pipe = self._process.stdout if stream == "out" else self._process.stderr
        assert pipe is not None
        while True:
            try:
                data = pipe.read1(65536)  # type: ignore[attr-defined]
            except (OSError, ValueError):
                data = b""
            if not data:
                self._events.put(("eof", stream))
                return
            self._events.put((stream, data))

    def _next_event(self, deadline: float | None, method: str) -> tuple[str, Any]:
        """Next protocol message; handles stderr, cancel escalation, exit and timeouts."""
        while True:
            self._escalate_cancel()
            try:
                kind, value = self._events.get(timeout=0.05)
            except queue.Empty:
                if deadline is not None and time.monotonic() > deadline:
                    self.kill()
                    raise JobFailure(
                        "internal", f"The job '{method}' timed out and was stopped."
                    ) from None
                if (
                    self._process is not None
                    and self._process.poll() is not None
                    and self._eofs >= 2
                ):
                    raise self._failure_after_exit(method) from None
                continue
            if kind == "err":
                self.session.feed_stderr(value)
            elif kind == "out":
                for message in self.session.feed_stdout(value):
                    self._events.put(("msg", message))
            elif kind == "eof":
                self._eofs += 1
                if self._eofs >= 2 and self._events.empty():
                    assert self._process is not None
                    self._process.wait()
                    raise self._failure_after_exit(method)
            else:
                return kind, value

    def _failure_after_exit(self, method: str) -> JobFailure:
        assert self._process is not None
        remove_workdir(self.workdir)  # the process is gone (crash, kill, cancel)
        if self._cancel_at is not None:
            return JobFailure("cancelled", "cancelled", stderr_tail=self.session.stderr_tail())
        return self.session.failure_from_exit(self._process.returncode, method)

    def _escalate_cancel(self) -> None:
        if self._cancel_at is None or self._process is None or self._process.poll() is not None:
            return
        waited = time.monotonic() - self._cancel_at
        if waited > CANCEL_GRACE_S + TERMINATE_GRACE_S:
            self._process.kill()
        elif waited > CANCEL_GRACE_S and not self._terminated:
            self._terminated = True
            self._process.terminate()


def run_job(
    method: str,
    params: dict[str, Any] | None = None,
    python: str | None = None,
    on_progress: ProgressCallback | None = None,
    timeout: float | None = None,
) -> Any:
    """Start a worker, run one job in it, and stop it again. Without a progress callback of
    the caller's, a terminal gets a progress line on stderr (core/progress_bar.py). On a
    remote host a dropped connection is tried once more (the code and every input that
    arrived stay there; a cut-off send resumes), and said on stderr."""
    import sys

    from deploylens.core.progress_bar import terminal_progress

    bar = terminal_progress(JOB_TITLES.get(method, method)) if on_progress is None else None
    progress = on_progress or bar
    try:
        for attempt in (1, 2):
            worker = Worker(python)
            try:
                return typed_result(method, _run_once(worker, method, params, progress, timeout))
            except JobFailure as failure:
                if not worker.host:  # a dead worker's staging folders beside the outputs
                    sweep_output_folders(method, params)
                if failure.kind != DISCONNECTED or attempt == 2:
                    raise
                print(f"deploylens: {failure.message} Trying once more.", file=sys.stderr)
            finally:
                worker.close()
    finally:
        if bar is not None:
            bar.close()
    raise AssertionError("unreachable")


def _run_once(worker: Worker, method: str, params: dict[str, Any] | None,
              progress: ProgressCallback | None, timeout: float | None) -> Any:  # fmt: skip
    files = request_files(method) if worker.host else {}
    if not files:
        return worker.run(method, params, on_progress=progress, timeout=timeout)
    from deploylens.core.worker.remote import Host, RemoteError
    from deploylens.core.worker.transfer import run_remote_files

    try:  # a remote worker: send its inputs, fetch its outputs
        return run_remote_files(
            Host.parse(worker.host),
            dict(params or {}),
            files,
            lambda sent: worker.run(method, sent, on_progress=progress, timeout=timeout),
            progress,
            result_files(method),
        )
    except RemoteError as exc:  # the host went away or refused, around the job
        raise JobFailure(remote_failure_kind(exc), exc.message, exc.hint) from None


def sweep_output_folders(method: str, params: dict[str, Any] | None) -> None:
    """After a worker crashed or was killed: the hidden staging folders it left beside the
    request's outputs (its ``finally`` never ran) go now, not at the next run."""
    from deploylens.core.files import sweep_stale_staging

    for field, kind in request_files(method).items():
        value: Any = params or {}
        for part in field.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if kind in ("out", "inout", "outdir") and isinstance(value, str) and value:
            folder = Path(value) if kind == "outdir" else Path(value).parent
            sweep_stale_staging(folder)


def remote_failure_kind(exc: Any) -> str:
    """A ``RemoteError`` as a failure kind: only a lost or unreachable connection is
    ``disconnected`` (worth a retry); a refused key or login is not."""
    return DISCONNECTED if exc.kind == "connect" else START_FAILED


# what a progress line calls each job, from the one job table
JOB_TITLES = {name: job.title for name, job in JOBS.items() if job.title}
