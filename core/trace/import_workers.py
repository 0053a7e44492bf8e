"""Worker processes for the large-file imports (chrome_parallel, nsys_parallel): each piece of a
file is read in a worker and handed back in the order it was sent, so an import merges them as
a sequential reader would. A task names its handler from a fixed table (never code, never a
path to import): the worker imports that reader's module on first use."""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import deque
from typing import Any

from deploylens.core.trace.model import BadTraceValue

WORKERS_ENV = "DEPLOYLENS_IMPORT_WORKERS"  # 1: always sequential
HANDLERS = {
    "chrome-range": ("deploylens.core.trace.chrome_parallel", "_columns_of_range"),
    "chrome-bytes": ("deploylens.core.trace.chrome_parallel", "_columns_of"),
    "nsys-rows": ("deploylens.core.trace.nsys_parallel", "rows_of_range"),
}


WORKER_MODULE = "deploylens.core.trace.import_workers"


class WorkerLost(OSError):
    """A worker could not start or died: the import is read again in one process."""


class BadPiece(Exception):
    """A piece its reader cannot take on its own (a cut fell inside a string): read the file
    again sequentially."""


def workers() -> int:
    """Processes for a large import: the cores nothing else is using (ours minus the 1-minute
    load average, rounded; at most 8) when there are 3 or more, else 1 — unless the
    environment says otherwise; 1 in a frozen app (its executable cannot be re-run as a
    worker). Two workers cost more CPU than one process (each decodes, then the columns
    travel and merge): with 32 MB pieces ~1.7x, and on 2 cores (load 1.1) 5.2-5.5 s wall
    against 3.2-3.4 s for one process on a 1M-event trace. With 8 MB pieces (2026-12-02, load
    ~0.5) 1.65-1.86 s CPU against 1.34-1.42 s, wall 0.98-1.11 against ~1.37 s: cheaper, but a
    busy 2-core machine still pays the extra CPU for no sure gain, so the threshold stays."""
    if getattr(sys, "frozen", False):
        return 1
    asked = os.environ.get(WORKERS_ENV, "")
    if asked.isdigit():
        return max(1, int(asked))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    try:
        busy = os.getloadavg()[0]
    except OSError:  # no load figure on this platform: assume an idle machine
        busy = 0.0
    spare = min(round(cores - busy), 8)
    return spare if spare >= 3 else 1


class Workers:
    """``count`` worker processes (``python -m deploylens.core.trace.import_workers``: no main
    module re-run, no fork of a process that runs Qt), fed by one thread each — a piece sent
    while the worker writes its last result never deadlocks — and read in the order the pieces
    were sent. A worker ends when its stdin closes, so none outlives this process."""

    def __init__(self, count: int) -> None:
        try:
            self.procs = [
                subprocess.Popen(
                    [sys.executable, "-m", WORKER_MODULE, "--worker"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                for _ in range(count)
            ]
        except OSError as exc:
            raise WorkerLost(f"an import worker could not start: {exc}") from None
        self.queues: list[queue.Queue[Any]] = [queue.Queue(2) for _ in self.procs]
        self.feeders = [
            threading.Thread(target=self._feed, args=(p, q), daemon=True)
            for p, q in zip(self.procs, self.queues, strict=True)
        ]
        for feeder in self.feeders:
            feeder.start()
        self.order: deque[tuple[int, int]] = deque()  # (worker, progress) per piece sent
        self.sent = 0

    @staticmethod
    def _feed(proc: subprocess.Popen[bytes], tasks: queue.Queue[Any]) -> None:
        try:
            while (task := tasks.get()) is not None:
                pickle.dump(task, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[arg-type]
                proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):
            pass  # the worker died or was ended: its reader says so

    def send(self, task: tuple[Any, ...], done: int) -> None:
        worker = self.sent % len(self.procs)
        self.queues[worker].put(task)
        self.order.append((worker, done))
        self.sent += 1

    def receive(self) -> tuple[Any, int]:
        """The oldest piece's result (``BadPiece``, ``BadTraceValue`` as the worker raised)."""
        worker, done = self.order.popleft()
        try:
            status, value = pickle.load(self.procs[worker].stdout)  # type: ignore[arg-type]
        except (EOFError, pickle.UnpicklingError, OSError):
            code = self.procs[worker].wait(timeout=30)
            raise WorkerLost(f"an import worker ended with status {code}") from None
        if status == "bad-piece":
            raise BadPiece
        if status == "bad-value":
            raise BadTraceValue(value)
        return value, done

    def close(self, finished: bool) -> None:
        """End every worker: at once when the import stopped half way (a worker may be blocked
        writing a result no one will read), after its queue when it finished."""
        for tasks in self.queues:
            with contextlib.suppress(queue.Empty):
                while True:
                    tasks.get_nowait()
            tasks.put_nowait(None)
        if not finished:
            for proc in self.procs:
                proc.kill()
        for feeder in self.feeders:
            feeder.join(timeout=10)
        for proc in self.procs:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                proc.stdout.close()  # type: ignore[union-attr]
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _serve() -> None:
    """A worker: tasks in on stdin, results out on stdout, until stdin closes — or at once
    when the process that started it is gone (a killed CLI left two workers decoding a
    pathological piece for minutes)."""
    from deploylens.core.worker.reaper import die_with_parent, watch_parent

    die_with_parent()
    watch_parent(lambda: os._exit(1))
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            task = pickle.load(source)
        except EOFError:
            return
        module, name = HANDLERS[task[0]]
        try:
            answer: tuple[str, Any] = (
                "ok",
                getattr(importlib.import_module(module), name)(*task[1:]),
            )
        except BadPiece:
            answer = ("bad-piece", None)
        except BadTraceValue as exc:
            answer = ("bad-value", str(exc))
        pickle.dump(answer, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    # as the package's module, not __main__: the readers raise *its* BadPiece
    importlib.import_module("deploylens.core.trace.import_workers")._serve()
