"""Write a trace as Chrome trace JSON that Perfetto and chrome://tracing open, and the timeline's
tables as CSV.

Lanes become (pid, tid) pairs named by ``process_name``/``thread_name`` metadata; events are
complete (``"ph": "X"``) with ``ts``/``dur`` in µs written with three decimals from the integer
nanoseconds (exact, no float on the way); categories are Kineto's new names, so the file reads
back here with the same kinds; an API call and the GPU work it queued are joined by a flow
(``"s"``/``"f"``, ``"bp": "e"``) as Kineto's ``ac2g``. Written in blocks, atomically."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.files import atomic_open, atomic_write_text, csv_text
from deploylens.core.trace.model import COPY_KINDS, GPU_KINDS, KIND, KINDS, Trace, member

CATEGORY = {
    "kernel": "kernel",
    "memcpy_h2d": "gpu_memcpy",
    "memcpy_d2h": "gpu_memcpy",
    "memcpy_d2d": "gpu_memcpy",
    "memcpy_p2p": "gpu_memcpy",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "nvtx": "user_annotation",
    "cuda_api": "cuda_runtime",
    "cpu_op": "cpu_op",
    "ort_node": "Node",
    "other": "other",
}
BLOCK = 50_000


def _us(ns: np.ndarray) -> list[str]:
    """Integer ns → exact decimal µs text ("1712867402349219.960")."""
    whole, fraction = np.divmod(ns, 1000)
    return [f"{w}.{f:03d}" for w, f in zip(whole.tolist(), fraction.tolist(), strict=True)]


def lane_ids(trace: Trace) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """(pid, tid) per lane and the metadata events that name them."""
    groups: dict[str, int] = {}
    ids, meta = [], []
    for number, lane in enumerate(trace.lanes):
        if lane.group not in groups:
            groups[lane.group] = len(groups) + 1
            meta.append(_meta("process_name", groups[lane.group], 0, lane.group))
            meta.append(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": groups[lane.group],
                    "tid": 0,
                    "args": {"sort_index": groups[lane.group]},
                }
            )
        pid, tid = groups[lane.group], number + 1
        ids.append((pid, tid))
        meta.append(_meta("thread_name", pid, tid, lane.name))
    return ids, meta


def _meta(name: str, pid: int, tid: int, value: str) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {"name": value}}


def write_chrome(trace: Trace, path: str | Path, indices: np.ndarray | None = None) -> Path:
    """``indices`` limits the export to some events (a selected range)."""
    path = Path(path)
    rows = np.arange(len(trace)) if indices is None else np.asarray(indices)
    ids, meta = lane_ids(trace)
    category = [CATEGORY[k] for k in KINDS]
    gpu = set(GPU_KINDS)
    names = [json.dumps(n, ensure_ascii=False) for n in trace.names]
    with atomic_open(path) as handle:
        handle.write(b'{"displayTimeUnit": "ns", "otherData": ')
        handle.write(json.dumps(_other(trace)).encode())
        handle.write(b', "traceEvents": [\n')
        handle.write(",\n".join(json.dumps(m) for m in meta).encode())
        for block in range(0, rows.size, BLOCK):
            part = rows[block : block + BLOCK]
            handle.write(_events(trace, part, ids, category, names, gpu).encode("utf-8"))
        handle.write(_flows(trace, rows, ids).encode())
        handle.write(b"\n]}\n")
    return path


def _other(trace: Trace) -> dict[str, Any]:
    return {
        "exporter": "deploylens",
        "source": str(trace.meta.get("source", "")),
        "format": str(trace.meta.get("format", "")),
    }


def _events(
    trace: Trace,
    rows: np.ndarray,
    ids: list[tuple[int, int]],
    category: list[str],
    names: list[str],
    gpu: set[int],
) -> str:
    starts, durs = _us(trace.start[rows]), _us(trace.dur[rows])
    out = []
    for i, row in enumerate(rows.tolist()):
        kind = int(trace.kind[row])
        lane = int(trace.lane[row])
        pid, tid = ids[lane]
        args = []
        corr = int(trace.corr[row])
        if corr >= 0:
            args.append(f'"correlation": {corr}')
        if kind in gpu:
            lane_info = trace.lanes[lane]
            args.append(f'"device": {lane_info.device}, "stream": {lane_info.stream}')
        nbytes = int(trace.nbytes[row])
        if nbytes:
            args.append(f'"bytes": {nbytes}')
        detail = int(trace.detail[row])
        if detail:
            args.append(f'"detail": {names[detail]}')
        name = names[int(trace.name[row])]
        if kind == KIND["ort_node"]:
            name = name[:-1] + '_kernel_time"'
        elif kind in COPY_KINDS and "Memcpy" not in name:
            name = name[:-1] + f' [{KINDS[kind].replace("memcpy_", "").upper()}]"'
        out.append(
            f',\n{{"ph": "X", "cat": "{category[kind]}", "name": {name}, "pid": {pid}, '
            f'"tid": {tid}, "ts": {starts[i]}, "dur": {durs[i]}, "args": {{{", ".join(args)}}}}}'
        )
    return "".join(out)


def _flows(trace: Trace, rows: np.ndarray, ids: list[tuple[int, int]]) -> str:
    """One ``s``→``f`` pair per correlation id that has both an API call and GPU work."""
    corr = trace.corr[rows]
    api = rows[(trace.kind[rows] == KIND["cuda_api"]) & (corr >= 0)]
    work = rows[member(trace.kind[rows], GPU_KINDS) & (corr >= 0)]
    common, api_at, work_at = np.intersect1d(trace.corr[api], trace.corr[work], return_indices=True)
    out = []
    for c, a, w in zip(common.tolist(), api[api_at].tolist(), work[work_at].tolist(), strict=True):
        for phase, row, extra in (("s", a, ""), ("f", w, ', "bp": "e"')):
            pid, tid = ids[int(trace.lane[row])]
            ts = _us(trace.start[row : row + 1])[0]
            out.append(
                f',\n{{"ph": "{phase}", "id": {c}, "cat": "ac2g", "name": "ac2g", '
                f'"pid": {pid}, "tid": {tid}, "ts": {ts}{extra}}}'
            )
    return "".join(out)


def write_csv(rows: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Any of the timeline's tables (rows of one shape), atomically."""
    rows = list(rows)
    columns = list(rows[0]) if rows else ["empty"]
    atomic_write_text(path, csv_text(columns, rows))
    return Path(path)
