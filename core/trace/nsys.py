"""Nsight Systems SQLite exports (``nsys export --type sqlite``). The schema changes across
releases, so tables and columns are detected, never assumed: 2022.x names its metadata table
``EXPORT_META_DATA``, 2024.x ``META_DATA_EXPORT`` and adds ``ENUM_*`` tables; kernels name
themselves through ``shortName``/``demangledName`` ids into ``StringIds``; NVTX text is inline
(``text``) or an id (``textId``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.trace import nsys_parallel
from deploylens.core.trace.import_workers import WorkerLost, Workers, workers
from deploylens.core.trace.model import KIND, BadTraceValue, Lane, Trace, TraceBuilder
from deploylens.core.trace.nsys_parallel import Connection, as_rows
from deploylens.core.trace.partial import PartialViews

COPY_KINDS = {1: "memcpy_h2d", 2: "memcpy_d2h", 8: "memcpy_d2d", 10: "memcpy_p2p"}
MEMORY_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
}
NVTX_RANGES = (59, 60)
GPU_AND_API_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
)
BATCH = 16_384  # rows per fetch: a Python tuple per row costs ~350 bytes while it lives
COPY_NAMES = {
    "memcpy_h2d": "Memcpy HtoD",
    "memcpy_d2h": "Memcpy DtoH",
    "memcpy_d2d": "Memcpy DtoD",
    "memcpy_p2p": "Memcpy PtoP",
}  # NvtxPushPopRange, NvtxStartEndRange


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
              "CUPTI_ACTIVITY_KIND_MEMSET")  # fmt: skip


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def export_version(db: sqlite3.Connection, tables: set[str]) -> str:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables:
            rows = dict(db.execute(f"SELECT name, value FROM {table}").fetchall())
            return str(rows.get("EXPORT_PRODUCT_VERSION", ""))
    return "unknown"


def load_nsys(path: str | Path, partial: Callable[[Trace], None] | None = None) -> Trace:
    """The export's GPU work, API calls and NVTX ranges, in SQL batches; ``partial(trace so
    far)`` now and then while a large one loads."""
    path = Path(path)
    with open(path, "rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            raise UserError(
                f"{path.name} is not an SQLite database (export with `nsys export --type sqlite`)."
            )
    if nsys_parallel.worth_it(path):
        try:
            return _load(path, partial, parallel=True)
        except WorkerLost:
            pass  # a worker could not start or died: this process reads it all
    return _load(path, partial, parallel=False)


def _load(path: Path, partial: Callable[[Trace], None] | None, parallel: bool) -> Trace:
    db = nsys_parallel.connect(path)
    if parallel:
        db.pool = Workers(workers())
    finished = False
    try:
        tables = _tables(db)
        if "StringIds" not in tables:
            raise UserError(
                f"{path.name} is SQLite but not an Nsight Systems export (no StringIds table)."
            )
        strings = {key: str(value) for key, value in db.execute("SELECT id, value FROM StringIds")}
        builder = TraceBuilder()
        total = sum(
            db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in GPU_AND_API_TABLES
            if table in tables
        )
        builder.reserve(total)
        if partial is not None:
            views = PartialViews(partial, lambda: builder.copy().finish())
            builder.after_add = lambda: views(len(builder), len(builder) / max(total, 1))
        builder.meta.update(source=str(path), format="nsys", version=export_version(db, tables))
        gpu = [t for t in GPU_TABLES if t in tables]
        if not gpu:  # launches but no GPU activity: said, never an empty report that passes
            builder.meta["nothing_measured"] = (
                "the export holds no GPU activity tables (CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, "
                "_MEMSET): it was captured without CUDA tracing or exported without them — "
                "record with `nsys profile --trace=cuda` and export with `nsys export --type "
                "sqlite`"
            )
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            _kernels(db, builder, strings)
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            _copies(db, builder)
        if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
            for rows in _batches(
                db,
                "SELECT start, end, deviceId, streamId, COALESCE(correlationId, -1), "
                "COALESCE(bytes, 0) FROM CUPTI_ACTIVITY_KIND_MEMSET",
            ):
                _add_gpu(builder, rows, KIND["memset"], builder.intern("Memset"), rows[:, 5])
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            _runtime(db, builder, strings)
        if "NVTX_EVENTS" in tables:
            _nvtx(db, builder, strings)
        builder.after_add = None
        finished = True
        return builder.finish()
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged page can garble the schema
        raise UserError(
            f"{path.name} could not be read as an Nsight Systems export: {exc}."
        ) from None
    except BadTraceValue as exc:
        raise UserError(f"{path.name} is not a readable Nsight Systems export: {exc}.") from None
    finally:
        if db.pool is not None:
            db.pool.close(finished)
        db.close()


def _host_lane(global_tid: int | None, prefix: str = "") -> Lane:
    tid = int(global_tid or 0)
    pid, thread = (tid >> 24) & 0xFFFFFF, tid & 0xFFFFFF
    return Lane(f"process {pid}", f"{prefix}thread {thread}")


def _batches(db: sqlite3.Connection, query: str) -> Iterator[np.ndarray]:
    """A query's integer rows (NULLs coalesced in SQL) as int64 arrays of ``BATCH`` rows: each is
    turned into compact columns before the next is fetched, so the import never holds a whole
    table as int64 rows (~100 bytes per kernel) — let alone as Python tuples (~5× the file).
    ``BadTraceValue`` names the table and column of a cell that is not an integer."""
    parallel = nsys_parallel.scan(db, query, BATCH) if isinstance(db, Connection) else None
    if parallel is not None:
        yield from parallel
        return
    cursor = db.execute(query)
    while batch := cursor.fetchmany(BATCH):
        yield as_rows(cursor, batch, query)


def row_groups(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(columns, axis=0, return_inverse=True)`` for a small integer matrix. That call
    sorts rows as opaque records (~7 ms per 16k rows: a third of an import); packed into one
    int64 — the usual case for stream ids, grid/block sizes and memory kinds — it is one
    integer sort, in the same (lexicographic) order."""
    if not len(columns):
        return columns[:0], np.zeros(0, np.int64)
    low = columns.min(axis=0)
    spread = (columns.max(axis=0) - low).tolist()  # Python ints: no wrap-around
    bits = [int(b).bit_length() for b in spread]
    if sum(bits) > 62 or min(spread) < 0:
        unique, inverse = np.unique(columns, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    key = np.zeros(len(columns), np.int64)
    for column, width in enumerate(bits):
        key <<= width
        key |= columns[:, column] - low[column]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return columns[first], inverse.reshape(-1)


def _interned(
    builder: TraceBuilder, strings: dict[int, str], ids: np.ndarray, missing: str
) -> np.ndarray:
    """StringIds ids → the trace's name ids, one lookup per distinct id."""
    unique, inverse = np.unique(ids, return_inverse=True)
    table = np.array(
        [builder.intern(strings.get(int(i), missing if i < 0 else str(i))) for i in unique],
        np.int32,
    )
    return table[inverse] if unique.size else np.zeros(0, np.int32)


def _add_gpu(
    builder: TraceBuilder,
    rows: np.ndarray,
    kind: int | np.ndarray,
    names: int | np.ndarray,
    nbytes: np.ndarray | int = 0,
    detail: np.ndarray | int = 0,
) -> None:
    """Rows of (start, end, deviceId, streamId, correlationId, …) on their stream lanes."""
    if not len(rows):
        return
    pairs, inverse = row_groups(rows[:, 2:4])
    lanes = np.array(
        [builder.lane(Lane(f"GPU {d}", f"stream {s}", int(d), int(s))) for d, s in pairs], np.int32
    )
    n = len(rows)
    builder.add_columns(
        start=rows[:, 0],
        dur=np.maximum(rows[:, 1] - rows[:, 0], 0),
        lane=lanes[inverse],
        kind=np.broadcast_to(kind, n),
        name=np.broadcast_to(names, n),
        corr=rows[:, 4],
        nbytes=np.broadcast_to(nbytes, n),
        detail=np.broadcast_to(detail, n),
    )


def _kernels(db: sqlite3.Connection, builder: TraceBuilder, strings: dict[int, str]) -> None:
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = next((c for c in ("shortName", "demangledName", "mangledName") if c in cols), None)
    geometry = all(c in cols for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"))
    query = (
        "SELECT start, end, deviceId, streamId, COALESCE(correlationId, -1), "
        + (f"COALESCE({name_col}, -1)" if name_col else "-1")
        + (", gridX, gridY, gridZ, blockX, blockY, blockZ" if geometry else "")
        + " FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )
    for rows in _batches(db, query):
        detail: np.ndarray | int = 0
        if geometry:
            shapes, inverse = row_groups(rows[:, 6:12])
            table = np.array(
                [
                    builder.intern(f"grid {tuple(map(int, g[:3]))} block {tuple(map(int, g[3:]))}")
                    for g in shapes
                ],
                np.int32,
            )
            detail = table[inverse]
        names = _interned(builder, strings, rows[:, 5], "kernel")
        _add_gpu(builder, rows, KIND["kernel"], names, 0, detail)


def _copies(db: sqlite3.Connection, builder: TraceBuilder) -> None:
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
    kinds = ", srcKind, dstKind" if {"srcKind", "dstKind"} <= cols else ", -1, -1"
    for rows in _batches(
        db,
        "SELECT start, end, deviceId, streamId, COALESCE(correlationId, -1), COALESCE(bytes, 0), "
        f"copyKind{kinds} FROM CUPTI_ACTIVITY_KIND_MEMCPY",
    ):
        _add_copies(builder, rows)


def _add_copies(builder: TraceBuilder, rows: np.ndarray) -> None:
    kind = np.full(len(rows), KIND["memcpy"], np.int8)
    names = np.full(len(rows), builder.intern("Memcpy"), np.int32)
    for copy_kind, label in COPY_KINDS.items():
        on = rows[:, 6] == copy_kind
        kind[on] = KIND[label]
        names[on] = builder.intern(COPY_NAMES[label])
    memory, inverse = row_groups(rows[:, 7:9])
    table = np.array(
        [
            builder.intern(f"{MEMORY_KINDS.get(int(s), '?')} → {MEMORY_KINDS.get(int(d), '?')}")
            if s >= 0
            else 0
            for s, d in memory
        ],
        np.int32,
    )
    _add_gpu(builder, rows, kind, names, rows[:, 5], table[inverse])


def _runtime(db: sqlite3.Connection, builder: TraceBuilder, strings: dict[int, str]) -> None:
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
    for rows in _batches(
        db,
        "SELECT start, end, globalTid, COALESCE(correlationId, -1), "
        + ("COALESCE(nameId, -1)" if "nameId" in cols else "-1")
        + " FROM CUPTI_ACTIVITY_KIND_RUNTIME",
    ):
        _add_runtime(builder, strings, rows)


def _add_runtime(builder: TraceBuilder, strings: dict[int, str], rows: np.ndarray) -> None:
    tids, inverse = np.unique(rows[:, 2], return_inverse=True)
    lanes = np.array([builder.lane(_host_lane(int(t))) for t in tids], np.int32)
    n = len(rows)
    builder.add_columns(
        start=rows[:, 0],
        dur=np.maximum(rows[:, 1] - rows[:, 0], 0),
        lane=lanes[inverse],
        kind=np.full(n, KIND["cuda_api"]),
        name=_interned(builder, strings, rows[:, 4], "cuda API"),
        corr=rows[:, 3],
        nbytes=np.zeros(n),
        detail=np.zeros(n),
    )


def _nvtx(db: sqlite3.Connection, builder: TraceBuilder, strings: dict[int, str]) -> None:
    cols = _columns(db, "NVTX_EVENTS")
    text_id = "textId" if "textId" in cols else "NULL"
    query = (
        f"SELECT start, end, text, {text_id}, globalTid FROM NVTX_EVENTS "
        f"WHERE end IS NOT NULL AND eventType IN {NVTX_RANGES}"
    )
    for start, end, text, tid_text, tid in db.execute(query):
        if not all(isinstance(v, int) for v in (start, end)) or not isinstance(tid, int | None):
            bad = next(v for v in (start, end, tid) if not isinstance(v, int | None))
            raise BadTraceValue(
                f"table NVTX_EVENTS holds {str(bad)[:40]!r} where a time or thread id belongs"
            )
        name: Any = text if text is not None else strings.get(tid_text, "")
        builder.add(
            start, end - start, builder.lane(_host_lane(tid, "NVTX ")), KIND["nvtx"], str(name)
        )
