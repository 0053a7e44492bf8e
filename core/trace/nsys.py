"""Nsight Systems SQLite exports (``nsys export --type sqlite``). The schema changes across
releases, so tables and columns are detected, never assumed: 2022.x names its metadata table
``EXPORT_META_DATA``, 2024.x ``META_DATA_EXPORT`` and adds ``ENUM_*`` tables; kernels name
themselves through ``shortName``/``demangledName`` ids into ``StringIds``; NVTX text is inline
(``text``) or an id (``textId``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trace.model import KIND, Lane, Trace, TraceBuilder

COPY_KINDS = {1: "memcpy_h2d", 2: "memcpy_d2h", 8: "memcpy_d2d", 10: "memcpy_p2p"}
MEMORY_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
}
NVTX_RANGES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def export_version(db: sqlite3.Connection, tables: set[str]) -> str:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables:
            rows = dict(db.execute(f"SELECT name, value FROM {table}").fetchall())
            return str(rows.get("EXPORT_PRODUCT_VERSION", ""))
    return "unknown"


def load_nsys(path: str | Path) -> Trace:
    path = Path(path)
    with open(path, "rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            raise UserError(
                f"{path.name} is not an SQLite database (export with `nsys export --type sqlite`)."
            )
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = _tables(db)
        if "StringIds" not in tables:
            raise UserError(
                f"{path.name} is SQLite but not an Nsight Systems export (no StringIds table)."
            )
        strings = dict(db.execute("SELECT id, value FROM StringIds"))
        builder = TraceBuilder()
        builder.meta.update(source=str(path), format="nsys", version=export_version(db, tables))
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            _kernels(db, builder, strings)
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            _copies(db, builder)
        if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
            for start, end, device, stream, corr, nbytes in db.execute(
                "SELECT start, end, deviceId, streamId, correlationId, bytes "
                "FROM CUPTI_ACTIVITY_KIND_MEMSET"
            ):
                lane = builder.lane(Lane(f"GPU {device}", f"stream {stream}", device, stream))
                builder.add(
                    start, end - start, lane, KIND["memset"], "Memset", corr or -1, nbytes or 0
                )
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            cols = _columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
            for start, end, tid, corr, name_id in db.execute(
                "SELECT start, end, globalTid, correlationId, nameId "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME"
                if "nameId" in cols
                else "SELECT start, end, globalTid, correlationId, 0 "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME"
            ):
                builder.add(
                    start,
                    end - start,
                    builder.lane(_host_lane(tid)),
                    KIND["cuda_api"],
                    strings.get(name_id, "cuda API"),
                    corr or -1,
                )
        if "NVTX_EVENTS" in tables:
            _nvtx(db, builder, strings)
        return builder.finish()
    except sqlite3.DatabaseError as exc:
        raise UserError(
            f"{path.name} could not be read as an Nsight Systems export: {exc}."
        ) from None
    finally:
        db.close()


def _host_lane(global_tid: int | None, prefix: str = "") -> Lane:
    tid = int(global_tid or 0)
    pid, thread = (tid >> 24) & 0xFFFFFF, tid & 0xFFFFFF
    return Lane(f"process {pid}", f"{prefix}thread {thread}")


def _kernels(db: sqlite3.Connection, builder: TraceBuilder, strings: dict[int, str]) -> None:
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = next((c for c in ("shortName", "demangledName", "mangledName") if c in cols), None)
    geometry = all(c in cols for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"))
    query = (
        "SELECT start, end, deviceId, streamId, correlationId, "
        + (name_col or "0")
        + (", gridX, gridY, gridZ, blockX, blockY, blockZ" if geometry else "")
        + " FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )
    for row in db.execute(query):
        start, end, device, stream, corr, name_id = row[:6]
        detail = f"grid {tuple(row[6:9])} block {tuple(row[9:12])}" if geometry else ""
        lane = builder.lane(Lane(f"GPU {device}", f"stream {stream}", device, stream))
        builder.add(
            start,
            end - start,
            lane,
            KIND["kernel"],
            strings.get(name_id, str(name_id)),
            corr or -1,
            0,
            detail,
        )


def _copies(db: sqlite3.Connection, builder: TraceBuilder) -> None:
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
    kinds = ", srcKind, dstKind" if {"srcKind", "dstKind"} <= cols else ", -1, -1"
    for start, end, device, stream, corr, nbytes, copy_kind, src, dst in db.execute(
        f"SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind{kinds} "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY"
    ):
        kind = COPY_KINDS.get(copy_kind, "memcpy")
        detail = (
            f"{MEMORY_KINDS.get(src, '?')} → {MEMORY_KINDS.get(dst, '?')}"
            if src is not None and src >= 0
            else ""
        )
        name = {
            "memcpy_h2d": "Memcpy HtoD",
            "memcpy_d2h": "Memcpy DtoH",
            "memcpy_d2d": "Memcpy DtoD",
            "memcpy_p2p": "Memcpy PtoP",
        }.get(kind, "Memcpy")
        lane = builder.lane(Lane(f"GPU {device}", f"stream {stream}", device, stream))
        builder.add(start, end - start, lane, KIND[kind], name, corr or -1, nbytes or 0, detail)


def _nvtx(db: sqlite3.Connection, builder: TraceBuilder, strings: dict[int, str]) -> None:
    cols = _columns(db, "NVTX_EVENTS")
    text_id = "textId" if "textId" in cols else "NULL"
    query = (
        f"SELECT start, end, text, {text_id}, globalTid FROM NVTX_EVENTS "
        f"WHERE end IS NOT NULL AND eventType IN {NVTX_RANGES}"
    )
    for start, end, text, tid_text, tid in db.execute(query):
        name: Any = text if text is not None else strings.get(tid_text, "")
        builder.add(
            start, end - start, builder.lane(_host_lane(tid, "NVTX ")), KIND["nvtx"], str(name)
        )
