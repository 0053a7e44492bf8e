"""The worker's main loop: handshake, read commands on stdin, run one job at a time in a thread.

The channel is a private duplicate of the original stdout; fd 1 itself is then pointed at stderr,
so a ``print`` in user code or a C library writing to fd 1 lands in the captured stderr instead of
corrupting the JSON lines.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
from typing import Any

from deploylens.core.worker import protocol
from deploylens.core.worker.launch import WORKDIR_ENV
from deploylens.core.worker.methods import UnknownMethod, resolve
from deploylens.core.worker.probe import pip_install_line, probe_packages, python_info
from deploylens.core.worker.reaper import kill_descendants, watch_parent

EXIT_ORPHANED = 70  # the app was gone: nothing reads this exit status, it is for a human


class Cancelled(Exception):
    """Raised inside a job by ``ctx.progress``/``ctx.check_cancelled`` once cancel was asked."""


class Channel:
    """Writes protocol messages to the private fd; thread-safe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = protocol.encode(message)
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]


class JobContext:
    """What a job sees: progress, log, cancellation and a scratch folder for big arrays."""

    def __init__(
        self, job: str, channel: Channel, workdir: str, kept: list[Any] | None = None
    ) -> None:
        self.job = job
        self._channel = channel
        self._cancel = threading.Event()
        self.workdir = workdir
        self._kept = [] if kept is None else kept

    def keep(self, value: Any) -> None:
        """Hold ``value`` past the job's end instead of freeing it when the job returns: its
        destructor is pure cost (a 10k-layer TensorRT network: 0.06 s of CPU, a tenth of a
        ``support`` run) in a worker that leaves through ``os._exit``, freeing nothing. A
        worker that runs another job drops it as that job starts: never two jobs' worth."""
        self._kept.append(value)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def request_cancel(self) -> None:
        self._cancel.set()

    def check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise Cancelled()

    def progress(self, fraction: float | None, text: str = "", data: Any = None) -> None:
        self.check_cancelled()
        self._channel.send(protocol.progress(self.job, fraction, text, data))

    def log(self, text: str, level: str = "info") -> None:
        self._channel.send(protocol.log(self.job, level, text))


def _explained(exc: BaseException, params: Any) -> BaseException:
    """A library's refusal of the user's file as the ``UserError`` it is (core/errors)."""
    from deploylens.core.errors import UserError, explain_failure

    if isinstance(exc, (UserError, Cancelled)):
        return exc
    return explain_failure(exc, params) or exc


def _classify(job: str, exc: BaseException, python: str) -> dict[str, Any]:
    """Turn a job's exception into an ``error`` message of the right kind."""
    from deploylens.core.errors import UserError

    if isinstance(exc, Cancelled):
        return protocol.error(job, protocol.CANCELLED, "cancelled")
    if isinstance(exc, UserError):
        return protocol.error(job, protocol.USER, exc.message, exc.hint)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        line = pip_install_line(exc.name, python)
        return protocol.error(
            job,
            protocol.MISSING_DEPENDENCY,
            f"this job needs the Python module '{exc.name}', which the worker interpreter "
            f"({python}) does not have",
            line,
            traceback.format_exc(),
        )
    return protocol.error(
        job,
        protocol.INTERNAL,
        f"{type(exc).__name__}: {exc}",
        "",
        traceback.format_exc(),
    )


def _payload(value: Any) -> Any:
    """What goes on the wire for a job's return value: a typed result (``core/results.py``) as
    its fields, anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        from deploylens.core.typed import to_dict

        return to_dict(value)
    return value


class Worker:
    """Reads commands, runs jobs, answers on the channel."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.current: JobContext | None = None
        self.thread: threading.Thread | None = None
        self.busy = False  # cleared before the answer is sent, so the next run never races it
        self.kept: list[Any] = []  # what the last job handed ``JobContext.keep``
        # the app side names (and later removes) the folder; a worker started by hand makes one
        self.workdir = os.environ.get(WORKDIR_ENV) or tempfile.mkdtemp(prefix="deploylens-worker-")
        # every temporary file or folder a job makes (ours, onnx's, ORT's) goes inside it: a
        # killed worker's are swept with its folder, never left in /tmp (surgery's compare
        # folders were)
        tempfile.tempdir = self.workdir

    def _run_job(self, ctx: JobContext, method: str, params: dict[str, Any]) -> None:
        try:
            function = resolve(method)
            payload = _payload(function(ctx, params))
            try:
                message = protocol.result(ctx.job, payload)
                protocol.encode(message)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"job '{method}' returned a non-JSON payload: {exc}") from None
        except UnknownMethod as exc:
            message = protocol.error(ctx.job, protocol.INTERNAL, str(exc))
        except BaseException as exc:
            message = _classify(ctx.job, _explained(exc, params), sys.executable)
        finally:
            sys.stdout.flush()
        self.busy = False
        self.channel.send(message)

    def handle(self, command: dict[str, Any]) -> bool:
        """Act on one command; return False when the worker should stop."""
        kind = command.get("type")
        if kind == "run":
            job = str(command.get("job"))
            if self.busy:
                self.channel.send(
                    protocol.error(job, protocol.INTERNAL, "the worker is busy with another job")
                )
                return True
            self.busy = True
            self.kept.clear()  # the last job's (its thread has ended: busy was cleared after)
            self.current = JobContext(job, self.channel, self.workdir, self.kept)
            self.thread = threading.Thread(
                target=self._run_job,
                args=(self.current, str(command.get("method")), command.get("params") or {}),
                name="job-" + job,
                daemon=True,
            )
            self.thread.start()
        elif kind == "cancel":
            if self.current is not None and self.current.job == str(command.get("job")):
                self.current.request_cancel()
        elif kind == "shutdown":
            return False
        else:
            self.channel.send(protocol.log(None, "warning", f"unknown command type {kind!r}"))
        return True

    def serve(self, commands: Any) -> None:
        """Commands until ``shutdown``; a stdin that ends without one means the app is gone."""
        for line in commands:
            line = line.strip()
            if not line:
                continue
            try:
                command = json.loads(line)
            except ValueError:
                self.channel.send(protocol.log(None, "warning", "unreadable command line"))
                continue
            if not self.handle(command):
                break
        else:  # stdin ended without a shutdown: nobody reads the result any more
            orphaned(self.workdir)
        # shutdown: let a running job notice, then leave.
        if self.current is not None:
            self.current.request_cancel()
        if self.thread is not None:
            self.thread.join(timeout=1.0)


def orphaned(workdir: str) -> None:
    """The app died (kill -9, a crash) or dropped us: end now, before the job writes an output
    nobody asked for any more, leaving no staging folder, scratch folder or child process."""
    try:
        from deploylens.core.files import abandon_staged_outputs

        abandon_staged_outputs()
    except Exception:
        pass
    shutil.rmtree(workdir, ignore_errors=True)
    kill_descendants()
    os._exit(EXIT_ORPHANED)


def main() -> int:
    faulthandler.enable(file=sys.stderr, all_threads=True)
    sys.stdout.flush()
    channel = Channel(os.dup(1))
    os.dup2(2, 1)  # stray writes to fd 1 (print, C libraries) now land in the captured stderr
    worker = Worker(channel)
    watch_parent(lambda: orphaned(worker.workdir))
    try:
        channel.send(protocol.hello(python_info(full=False), probe_packages(deep=False)))
        worker.serve(sys.stdin)
    except BrokenPipeError:  # the app is gone (it exited or was killed): nobody to answer
        pass
    finally:
        shutil.rmtree(worker.workdir, ignore_errors=True)
        kill_descendants()  # what the job started (Ray's agents ignore their parent's death)
    sys.stdout.flush()
    sys.stderr.flush()
    # A job thread stuck in native code must not keep the process alive after shutdown.
    os._exit(0)
