"""Synthetic traces of a chosen size, for the timeline benchmark and scale tests — never shown
as a measurement. Half of the lanes are GPU streams (kernels, H2D/D2H copies from pinned or
pageable memory, memsets), half host threads issuing the CUDA API calls that queued them (the
same correlation ids), with NVTX-like ranges over groups of calls."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from deploylens.core.trace.model import KIND, Lane, Trace

KERNEL_NAMES = [
    f"void ampere_sgemm_{m}x{n}_nn_kernel<float, {k}>(cutlass::Params)"
    for m in (32, 64, 128, 256)
    for n in (32, 64, 128)
    for k in (1, 2, 4, 8, 16)
]


def make_trace(events: int, lanes: int = 16, seed: int = 0) -> Trace:
    """About ``events`` events on ``lanes`` lanes (half GPU streams, half host threads)."""
    rng = np.random.default_rng(seed)
    streams = max(lanes // 2, 1)
    gpu_n = events // 2
    host_n = events - gpu_n
    names = [
        "",
        *KERNEL_NAMES,
        "Memcpy HtoD (Pinned -> Device)",
        "Memcpy DtoH (Device -> Pageable)",
    ]
    names += ["Memset (Device)", "cudaLaunchKernel", "cudaMemcpyAsync", "Pinned → Device"]
    names += ["Device → Pageable", "grid (128, 1, 1) block (256, 1, 1)"]
    index = {n: i for i, n in enumerate(names)}
    lane_list = [Lane("GPU 0", f"stream {7 + s}", 0, 7 + s) for s in range(streams)]
    lane_list += [Lane("process 1234", f"thread {100 + t}") for t in range(lanes - streams)]
    host_lanes = max(lanes - streams, 1)

    choice = rng.random(gpu_n)
    kind = np.full(gpu_n, KIND["kernel"], np.int8)
    kind[choice > 0.90] = KIND["memcpy_h2d"]
    kind[choice > 0.95] = KIND["memcpy_d2h"]
    kind[choice > 0.98] = KIND["memset"]
    name = rng.integers(1, 1 + len(KERNEL_NAMES), gpu_n).astype(np.int32)
    name[kind == KIND["memcpy_h2d"]] = index["Memcpy HtoD (Pinned -> Device)"]
    name[kind == KIND["memcpy_d2h"]] = index["Memcpy DtoH (Device -> Pageable)"]
    name[kind == KIND["memset"]] = index["Memset (Device)"]
    dur = rng.lognormal(8.0, 1.0, gpu_n).astype(np.int64) + 500  # ~3 µs median
    lane = rng.integers(0, streams, gpu_n).astype(np.int32)
    gap = rng.integers(100, 4000, gpu_n)
    start = np.zeros(gpu_n, np.int64)
    for s in range(streams):  # back to back per stream
        on = np.flatnonzero(lane == s)
        start[on] = np.cumsum(dur[on] + gap[on]) - dur[on]
    nbytes = np.where(np.isin(kind, (KIND["memcpy_h2d"], KIND["memcpy_d2h"])), dur * 12, 0)
    detail = np.zeros(gpu_n, np.int32)
    detail[kind == KIND["memcpy_h2d"]] = index["Pinned → Device"]
    detail[kind == KIND["memcpy_d2h"]] = index["Device → Pageable"]
    detail[kind == KIND["kernel"]] = index["grid (128, 1, 1) block (256, 1, 1)"]
    corr = np.arange(gpu_n, dtype=np.int64)

    # host: the API call that queued each GPU event, a few µs before it on some thread
    h = min(host_n, gpu_n)
    host_lane = (streams + (lane[:h] % host_lanes)).astype(np.int32)
    host_dur = rng.integers(2000, 6000, h)
    host_start = np.maximum(start[:h] - host_dur - rng.integers(1000, 20000, h), 0)
    host_kind = np.full(h, KIND["cuda_api"], np.int8)
    host_name = np.where(
        kind[:h] == KIND["kernel"], index["cudaLaunchKernel"], index["cudaMemcpyAsync"]
    ).astype(np.int32)

    columns = {
        "start": np.concatenate([start, host_start]),
        "dur": np.concatenate([dur, host_dur]),
        "lane": np.concatenate([lane, host_lane]),
        "kind": np.concatenate([kind, host_kind]),
        "name": np.concatenate([name, host_name]),
        "corr": np.concatenate([corr, corr[:h]]),
        "nbytes": np.concatenate([nbytes, np.zeros(h, np.int64)]),
        "detail": np.concatenate([detail, np.zeros(h, np.int32)]),
    }
    columns["start"] += 1_712_867_402_349_219_960  # an epoch-based clock, as Kineto writes
    order = np.lexsort((columns["start"], columns["lane"]))
    columns = {k: np.ascontiguousarray(v[order]) for k, v in columns.items()}
    return Trace(
        **columns, names=names, lanes=lane_list, meta={"source": "synthetic", "format": "synthetic"}
    )


def write_nsys_sqlite(trace: Trace, path: str | Path) -> Path:
    """The trace as an Nsight Systems 2024-style SQLite export (the tables our importer reads)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        db.executescript(
            """
            CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
                globalPid INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER,
                gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
                registersPerThread INTEGER, staticSharedMemory INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
                globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER,
                dstKind INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
                globalPid INTEGER, value INTEGER, bytes INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,
                eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,
                returnValue INTEGER);
            """
        )
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(trace.names))
        db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', 'synthetic')")
        stream = np.array([lane.stream for lane in trace.lanes])[trace.lane]
        end = trace.start + trace.dur

        def rows(mask: np.ndarray, *extra: np.ndarray) -> list[tuple[int, ...]]:
            cols = [trace.start[mask], end[mask], np.zeros(mask.sum(), np.int64), stream[mask]]
            return list(zip(*(c.tolist() for c in (*cols, trace.corr[mask], *extra)), strict=True))

        k = trace.kind == KIND["kernel"]
        one = np.ones(k.sum(), np.int64)
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, "
            "correlationId, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            rows(k, trace.name[k], one * 128, one, one, one * 256, one, one),
        )
        for kind, copy_kind, src, dst in (("memcpy_h2d", 1, 1, 2), ("memcpy_d2h", 2, 2, 0)):
            m = trace.kind == KIND[kind]
            n = np.ones(m.sum(), np.int64)
            db.executemany(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, "
                "correlationId, bytes, copyKind, srcKind, dstKind) VALUES (?,?,?,?,?,?,?,?,?)",
                rows(m, trace.nbytes[m], n * copy_kind, n * src, n * dst),
            )
        m = trace.kind == KIND["memset"]
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, streamId, "
            "correlationId, bytes) VALUES (?,?,?,?,?,?)",
            rows(m, trace.nbytes[m]),
        )
        m = trace.kind == KIND["cuda_api"]
        thread = np.array([int(lane.name.split()[-1]) for lane in trace.lanes])[trace.lane]
        global_tid = (1234 << 24) | thread
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, "
            "nameId) VALUES (?,?,?,?,?)",
            list(
                zip(
                    *(
                        c.tolist()
                        for c in (
                            trace.start[m],
                            end[m],
                            global_tid[m],
                            trace.corr[m],
                            trace.name[m],
                        )
                    ),
                    strict=True,
                )
            ),
        )
        db.commit()
    finally:
        db.close()
    return path
