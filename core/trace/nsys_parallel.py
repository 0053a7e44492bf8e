"""Nsight Systems exports on every core: a large export's GPU and API tables are fetched by rowid
range in worker processes (import_workers), each range's rows as one int64 array, and handed to
the reader in the order of a plain table scan, cut into the same batches — so the trace is the
sequential one. Fetching rows (a Python tuple each, in the sqlite3 module) is most of the time;
the columns are then made here while the workers fetch the next ranges."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.trace.import_workers import Workers, workers
from deploylens.core.trace.model import BadTraceValue

PARALLEL_FROM = 64 << 20  # smaller exports: the workers' start costs more than it saves
RANGE_ROWS = 1 << 18


class Connection(sqlite3.Connection):
    """A read-only connection that may carry workers for its big scans."""

    pool: Workers | None = None
    path = ""


def worth_it(path: Path) -> bool:
    try:
        return workers() > 1 and path.stat().st_size >= PARALLEL_FROM
    except OSError:
        return False


def connect(path: Path) -> Connection:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, factory=Connection)
    db.text_factory = lambda raw: raw.decode("utf-8", "replace")  # a corrupt name stays a name
    db.path = str(path)
    return db


def as_rows(cursor: sqlite3.Cursor, batch: list[tuple[Any, ...]], query: str) -> np.ndarray:
    """A batch of integer rows as int64 (``BadTraceValue`` names a cell that is not one)."""
    width = len(cursor.description or ())
    try:
        return np.array(batch, dtype=np.int64).reshape(-1, width)
    except (ValueError, TypeError, OverflowError):
        raise BadTraceValue(bad_cell(cursor, batch, query)) from None


def bad_cell(cursor: sqlite3.Cursor, batch: list[tuple[Any, ...]], query: str) -> str:
    names = [d[0] for d in cursor.description or []]
    table = query.rsplit(" FROM ", 1)[-1].split()[0]
    for row in batch:
        for index, value in enumerate(row):
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not -(2**63) <= value < 2**63
            ):
                column = names[index] if index < len(names) else f"column {index}"
                return (
                    f"table {table} holds {str(value)[:40]!r} in {column}, where an integer belongs"
                )
    return f"table {table} holds a value that is not an integer"


def rows_of_range(path: str, query: str, low: int, high: int) -> np.ndarray:
    """In a worker: ``query``'s rows with ``low <= rowid < high``, in rowid order."""
    db = connect(Path(path))
    try:
        cursor = db.execute(f"{query} WHERE rowid >= ? AND rowid < ? ORDER BY rowid", (low, high))
        return as_rows(cursor, cursor.fetchall(), query)
    finally:
        db.close()


def scan(db: Connection, query: str, batch: int) -> Iterator[np.ndarray] | None:
    """The table's rows in ``batch``-row arrays from the workers, or ``None`` when this scan
    stays sequential (no workers, a filtered query, a table without rowids)."""
    pool = db.pool
    if pool is None or " WHERE " in query:
        return None
    table = query.rsplit(" FROM ", 1)[-1].split()[0]
    try:
        low, high = db.execute(f"SELECT MIN(rowid), MAX(rowid) FROM {table}").fetchone()
    except sqlite3.Error:
        return None
    if low is None:
        return None
    return _batches(pool, db.path, query, int(low), int(high) + 1, batch)


def _batches(
    pool: Workers, path: str, query: str, low: int, high: int, batch: int
) -> Iterator[np.ndarray]:
    starts = range(low, high, RANGE_ROWS)
    waiting: list[np.ndarray] = []
    held = 0
    sent = 0
    for received in range(len(starts)):
        while sent < len(starts) and sent - received < 2 * len(pool.procs):
            start = starts[sent]
            pool.send(("nsys-rows", path, query, start, min(start + RANGE_ROWS, high)), sent)
            sent += 1
        rows, _ = pool.receive()
        waiting.append(rows)
        held += len(rows)
        if held >= batch:
            joined = np.concatenate(waiting)
            cut = len(joined) - len(joined) % batch
            for at in range(0, cut, batch):
                yield joined[at : at + batch]
            waiting, held = [joined[cut:]], len(joined) - cut
    if held:
        yield np.concatenate(waiting)
