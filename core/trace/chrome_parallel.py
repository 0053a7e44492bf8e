"""The Chrome-trace import on every core: a large file is cut into pieces of whole events, each
piece decoded and turned into columns in a worker process (``chrome.chunk_columns``), and the
pieces merged here in file order — so the trace is the one a sequential import makes, ids
included. The decode is most of an import's time and runs at C speed in msgspec, so one process
cannot go faster than it; two cores halve it.

A plain file's pieces are byte ranges the workers read themselves (this process only finds the
cuts: a regex search near every ``PIECE`` bytes of a memory map); a gzipped file is inflated
here and its pieces sent as bytes. A cut between ``}`` and ``{`` can fall inside a string (a
name holding ``},{``): that piece is not JSON, its worker says so, and the file is read again
sequentially — the answer never depends on where the cuts fell. The tail (the last piece and
whatever follows the event list) is read by the sequential reader, which knows how lists end.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from deploylens.core.trace import chrome
from deploylens.core.trace.json_stream import _BETWEEN, _find_array, iter_chunks, open_binary
from deploylens.core.trace.model import BadTraceValue

PIECE = 32 << 20
PARALLEL_FROM = 192 << 20  # smaller files: a worker's start (~0.4 s) costs more than it saves
WORKERS_ENV = "DEPLOYLENS_IMPORT_WORKERS"  # 1: always sequential


class BadCut(Exception):
    """A piece that is not a JSON list of events: a cut fell inside a string."""


def workers() -> int:
    """Processes for a large import: the cores (at most 8), unless the environment says
    otherwise; 1 in a frozen app (its executable cannot be re-run as a worker)."""
    if getattr(sys, "frozen", False):
        return 1
    asked = os.environ.get(WORKERS_ENV, "")
    if asked.isdigit():
        return max(1, int(asked))
    return min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, 8)


def worth_it(path: Path) -> bool:
    try:
        return workers() > 1 and path.stat().st_size >= PARALLEL_FROM
    except OSError:
        return False


def _columns_of(data: bytes) -> chrome.Chunk:
    try:
        events = chrome.decode_events(b"".join((b"[", data, b"]")))
    except BadTraceValue:
        raise
    except ValueError:
        raise BadCut from None
    return chrome.chunk_columns(events)


def _columns_of_range(path: str, start: int, end: int) -> chrome.Chunk:
    """In a worker: read ``[start, end)`` of a plain file and make its columns."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    return _columns_of(data)


def _plain_pieces(path: Path, piece: int) -> tuple[list[tuple[int, int]], int]:
    """Byte ranges of whole events, and where the tail starts."""
    with open_binary(path) as handle:
        rest = _find_array(handle, path)
        offset = handle.tell() - len(rest)
    with open(path, "rb") as raw, mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as view:
        size, at, ranges = len(view), offset, []
        while size - at > 2 * piece:
            found = _BETWEEN.search(view, at + piece)
            if found is None:
                break
            ranges.append((at, found.start() + 1))
            at = found.end() - 1
    return ranges, at


def _gzip_pieces(path: Path, piece: int) -> Iterator[tuple[bytes | None, int, bytes]]:
    """(piece bytes, compressed bytes read, ``b""``) per piece, then (None, read, tail)."""
    with open_binary(path) as handle:
        raw = getattr(handle, "fileobj", None) or handle
        buffer = bytearray(_find_array(handle, path))
        want = 2 * piece
        while True:
            while len(buffer) < want:
                more = handle.read(piece)
                if not more:
                    yield None, raw.tell(), bytes(buffer)
                    return
                buffer += more
            found = _BETWEEN.search(buffer, piece)
            if found is None:  # one event longer than a piece: read on
                want = len(buffer) + piece
                continue
            yield bytes(buffer[: found.start() + 1]), raw.tell(), b""
            del buffer[: found.end() - 1]
            want = 2 * piece


class _Workers:
    """``count`` worker processes (``python -m deploylens.core.trace.chrome_parallel``: no main
    module re-run, no fork of a process that runs Qt), fed by one thread each — a piece sent
    while the worker writes its last result never deadlocks — and read in the order the pieces
    were sent. A worker ends when its stdin closes, so none outlives this process."""

    def __init__(self, count: int) -> None:
        self.procs = [
            subprocess.Popen(
                [sys.executable, "-m", "deploylens.core.trace.chrome_parallel", "--worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            for _ in range(count)
        ]
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

    def receive(self) -> tuple[chrome.Chunk, int]:
        """The oldest piece's chunk (``BadCut``, ``BadTraceValue`` as the worker raised)."""
        worker, done = self.order.popleft()
        try:
            status, value = pickle.load(self.procs[worker].stdout)  # type: ignore[arg-type]
        except (EOFError, pickle.UnpicklingError, OSError):
            code = self.procs[worker].wait(timeout=30)
            raise OSError(f"an import worker ended with status {code}") from None
        if status == "bad-cut":
            raise BadCut
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
    """A worker: pieces in on stdin, chunks out on stdout, until stdin closes."""
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            task = pickle.load(source)
        except EOFError:
            return
        try:
            chunk = _columns_of_range(*task[1:]) if task[0] == "range" else _columns_of(task[1])
            answer: tuple[str, Any] = ("ok", chunk)
        except BadCut:
            answer = ("bad-cut", None)
        except BadTraceValue as exc:
            answer = ("bad-value", str(exc))
        pickle.dump(answer, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


def load_parallel(path: Path, state: Any, report: Callable[[int], None] | None, count: int) -> bool:
    """Merge every piece but the tail into ``state`` (a ``chrome.ChromeImport``), then the tail;
    ``False`` when a cut fell inside a string (``state`` is then spoilt: start again)."""
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    pool = _Workers(count)
    finished = False

    def drain(limit: int) -> None:
        while len(pool.order) > limit:
            chunk, done = pool.receive()
            state.merge(chunk)
            if report is not None:
                report(done)

    try:
        tail = b""
        if gzipped:
            for data, done, rest in _gzip_pieces(path, PIECE):
                if data is None:
                    tail = rest
                    break
                pool.send(("bytes", data), done)
                drain(2 * count)
        else:
            ranges, at = _plain_pieces(path, PIECE)
            for start, end in ranges:
                pool.send(("range", str(path), start, end), end)
                drain(2 * count)
            with open(path, "rb") as handle:
                handle.seek(at)
                tail = handle.read()
        drain(0)
        finished = True
    except BadCut:
        return False
    finally:
        pool.close(finished)
    for events in iter_chunks(path, chrome.decode_events, source=io.BytesIO(tail)):
        state.add(events)
    return True


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _serve()
