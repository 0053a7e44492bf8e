"""Pathological Chrome traces, written by streaming at any size (a few MB for the fuzz suite,
GBs for ``bench/hostile_traces.py``): each stresses one way an importer can hang or run out of
memory on a file it should refuse or read within bounds (issue 44)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

EVENT = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1.5}'
BLOCK = 1 << 22


def _events(handle: object, count: int, start: int = 0) -> None:
    write = handle.write  # type: ignore[attr-defined]
    for first in range(start, start + count, 10_000):
        last = min(first + 10_000, start + count)
        write(b",".join(EVENT % (1000 + i) for i in range(first, last)))
        if last < start + count:
            write(b",")


def _repeat(handle: object, piece: bytes, size: int) -> None:
    """``piece`` repeated to about ``size`` bytes, whole pieces only (a cut escape is bad JSON)."""
    size -= size % len(piece)
    block = piece * max(1, BLOCK // len(piece))
    written = 0
    while written < size:
        part = block[: size - written]
        handle.write(part)  # type: ignore[attr-defined]
        written += len(part)


def huge_name(path: Path, size: int) -> None:
    """One kernel whose ``name`` is ``size`` bytes long."""
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        _events(f, 100)
        f.write(b',{"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":5,"dur":1,"name":"')
        _repeat(f, b"A", size)
        f.write(b'"}]}')


def escaped_args(path: Path, size: int) -> None:
    """An event whose ``args`` string is ``size`` bytes of ``\\u0041`` escapes."""
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        _events(f, 100)
        f.write(b',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,')
        f.write(b'"args":{"detail":"')
        _repeat(f, b"\\u0041", size)
        f.write(b'"}}]}')


def bad_numbers(path: Path, size: int) -> None:
    """About ``size`` bytes of events whose ``ts``/``dur`` are 1e400, 30 digits or bare NaN."""
    bad = [b"1e400", b"9" * 30, b"-1e999", b"123456789012345678901234567890.5"]
    count = max(size // 80, 4)
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        for i in range(count):
            value = bad[i % len(bad)]
            f.write(b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":' + value
                    + b',"dur":' + bad[(i + 1) % len(bad)] + b"}")  # fmt: skip
            if i + 1 < count:
                f.write(b",")
        f.write(b"]}")


def gzip_spaces(path: Path, size: int) -> None:
    """A gzip of two events with ``size`` bytes of spaces between them, inside the list."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"traceEvents":[')
        _events(f, 100)
        f.write(b",")
        _repeat(f, b" ", size)
        f.write(EVENT % 5)
        f.write(b"]}")


def deep_array(path: Path, size: int, events: int = 20_000) -> None:
    """``events`` good events, then one whose ``args`` nests an array ``size`` levels deep."""
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        _events(f, events)
        f.write(b',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":')
        _repeat(f, b"[", size)
        _repeat(f, b"]", size)
        f.write(b"}]}")


def long_pid(path: Path, size: int) -> None:
    """Events whose ``pid`` is a number ``size`` digits long."""
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        _events(f, 100)
        f.write(b',{"ph":"X","cat":"kernel","name":"k","tid":7,"ts":5,"dur":1,"pid":')
        _repeat(f, b"7", size)
        f.write(b"}]}")


TRACES: dict[str, Callable[[Path, int], None]] = {
    "huge-name": huge_name,
    "escaped-args": escaped_args,
    "bad-numbers": bad_numbers,
    "gzip-spaces": gzip_spaces,
    "deep-array": deep_array,
    "long-pid": long_pid,
}
# The sizes the issue measured (a 2 GiB name, 720 MB of escapes, 7.4 M events of bad numbers,
# 8 GiB of spaces gzipped, a 157 M-deep array after 700 k events, a 5,000-digit pid).
FULL = {"huge-name": 2 << 30, "escaped-args": 720 << 20, "bad-numbers": 600 << 20,
        "gzip-spaces": 8 << 30, "deep-array": 157_000_000, "long-pid": 5000}  # fmt: skip


def nsys_without_gpu_tables(path: Path, launches: int = 50) -> Path:
    """An Nsight Systems SQLite export with kernel launches but no GPU activity table (nothing
    was measured on the GPU)."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, "
               "nameId)")  # fmt: skip
    db.execute("INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel')")
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, 1)",
                   [(i * 100, i * 100 + 20, i) for i in range(launches)])  # fmt: skip
    db.commit()
    db.close()
    return path
