"""What the timeline's questions need, computed on the columnar arrays: per-kernel latency,
per-stream busy %, copy/compute overlap, concurrency, idle gaps, copy bandwidth and hints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from deploylens.core.trace.model import COPY_KINDS, GPU_KINDS, KIND, KINDS, Trace


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint ``(starts, ends)``."""
    if start.size == 0:
        return start, end
    if np.all(start[1:] >= start[:-1]):  # a lane slice usually is sorted already
        s, e = start, np.maximum.accumulate(end)
    else:
        order = np.argsort(start, kind="stable")
        s, e = start[order], end[order]
        del order
        np.maximum.accumulate(e, out=e)
    new = np.empty(s.size, bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    return s[new], np.maximum.reduceat(e, np.flatnonzero(new))


def covered(
    start: np.ndarray, end: np.ndarray, union_s: np.ndarray, union_e: np.ndarray
) -> np.ndarray:
    """Per interval, how much of it lies inside the (disjoint, sorted) union."""
    if union_s.size == 0 or start.size == 0:
        return np.zeros(start.size, np.int64)
    cumulative = np.concatenate([[0], np.cumsum(union_e - union_s)])

    def inside_before(t: np.ndarray) -> np.ndarray:  # covered length in (-inf, t]
        i = np.searchsorted(union_s, t, side="right")
        partial = np.where(
            i > 0, np.minimum(t, union_e[np.maximum(i - 1, 0)]) - union_s[np.maximum(i - 1, 0)], 0
        )
        return cumulative[np.maximum(i - 1, 0)] * (i > 0) + np.maximum(partial, 0)

    return inside_before(end) - inside_before(start)


def kernel_table(trace: Trace) -> list[dict[str, Any]]:
    """Per-name latency of GPU kernels, or of ONNX Runtime nodes in a trace without kernels
    (``gpu_percent`` is then the share of the nodes' total time)."""
    mask = trace.kind == KIND["kernel"]
    if not mask.any():
        mask = trace.kind == KIND["ort_node"]
    names, durations = trace.name[mask], trace.dur[mask].astype(np.float64)
    total_gpu = float(durations.sum()) or 1.0
    order = np.lexsort((durations, names))
    names, durations = names[order], durations[order]
    bounds = np.flatnonzero(np.diff(names)) + 1
    rows = []
    for group in np.split(np.arange(names.size), bounds):
        if not group.size:
            continue
        d = durations[group]
        rows.append(
            {
                "name": trace.names[int(names[group[0]])],
                "count": int(d.size),
                "total_us": d.sum() / 1e3,
                "mean_us": d.mean() / 1e3,
                "median_us": float(np.median(d)) / 1e3,
                "p90_us": float(np.percentile(d, 90)) / 1e3,
                "p99_us": float(np.percentile(d, 99)) / 1e3,
                "min_us": d[0] / 1e3,
                "max_us": d[-1] / 1e3,
                "gpu_percent": 100.0 * d.sum() / total_gpu,
            }
        )
    rows.sort(key=lambda r: -r["total_us"])
    return rows


def _gpu_lanes(trace: Trace) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """(lane id, start, end, kind) of the GPU work on each lane, one lane slice at a time: the
    trace is sorted by lane, so no temporary is ever the size of the whole trace."""
    bounds = np.searchsorted(trace.lane, np.arange(len(trace.lanes) + 1))
    for lane_id in range(len(trace.lanes)):
        a, b = int(bounds[lane_id]), int(bounds[lane_id + 1])
        if a == b:
            continue
        kind = trace.kind[a:b]
        gpu = np.isin(kind, GPU_KINDS)
        if gpu.any():
            start = trace.start[a:b][gpu]
            yield lane_id, start, start + trace.dur[a:b][gpu], kind[gpu]


def stream_stats(trace: Trace) -> list[dict[str, Any]]:
    lanes = list(_gpu_lanes(trace))
    if not lanes:
        return []
    first = min(int(s.min()) for _, s, _, _ in lanes)
    span = max(max(int(e.max()) for _, _, e, _ in lanes) - first, 1)
    rows = []
    for lane_id, start, end, _ in lanes:
        lane = trace.lanes[lane_id]
        s, e = merged(start, end)
        rows.append(
            {
                "lane": lane.title,
                "device": lane.device,
                "stream": lane.stream,
                "events": int(start.size),
                "busy_percent": 100.0 * float((e - s).sum()) / span,
            }
        )
    return rows


def overlap(trace: Trace) -> dict[str, Any]:
    """Share of copy time hidden behind kernels on other streams of the same device, plus the
    concurrency histogram (time with k streams busy at once) and the largest idle gaps."""
    result: dict[str, Any] = {"copy_ns": 0, "hidden_ns": 0, "concurrency_ns": {}, "gaps": []}
    by_device: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for lane_id, start, end, kind in _gpu_lanes(trace):
        by_device.setdefault(trace.lanes[lane_id].device, []).append((start, end, kind))
    for device in sorted(by_device):
        lanes = by_device[device]
        kernels = [(s[k == KIND["kernel"]], e[k == KIND["kernel"]]) for s, e, k in lanes]
        ks, ke = merged(
            np.concatenate([s for s, _ in kernels]), np.concatenate([e for _, e in kernels])
        )
        del kernels
        for s, e, k in lanes:
            copy = np.isin(k, COPY_KINDS)
            result["copy_ns"] += int((e[copy] - s[copy]).sum())
            result["hidden_ns"] += int(covered(s[copy], e[copy], ks, ke).sum())
        del ks, ke  # big temporaries one after another, never all at once
        unions = [merged(s, e) for s, e, _ in lanes]
        # Every lane's busy edges in one sorted int64 array: time·2 + 1 for a start, time·2 for
        # an end (so an end sorts first at equal times); ~21 bytes per edge in all.
        code = np.concatenate([u * 2 + 1 for u, _ in unions] + [v * 2 for _, v in unions])
        code.sort()
        level = np.cumsum((code & 1).astype(np.int8) * 2 - 1, dtype=np.int32)
        np.right_shift(code, 1, out=code)
        spans = np.diff(code)
        del code
        if spans.size:  # time spent at each level (how many streams busy at once)
            totals = np.bincount(level[:-1], weights=spans)
            for k in np.flatnonzero(np.bincount(level[:-1])):
                ns = result["concurrency_ns"].get(int(k), 0) + int(totals[k])
                result["concurrency_ns"][int(k)] = ns
        us, ue = merged(
            np.concatenate([u for u, _ in unions]), np.concatenate([v for _, v in unions])
        )
        gaps = us[1:] - ue[:-1]
        for index in np.argsort(-gaps)[:5]:
            if gaps[index] > 0:
                result["gaps"].append(
                    {
                        "device": device,
                        "start_ns": int(ue[index]),
                        "gap_us": float(gaps[index]) / 1e3,
                    }
                )
    result["hidden_percent"] = (
        100.0 * result["hidden_ns"] / result["copy_ns"] if result["copy_ns"] else None
    )
    result["idle_ns"] = result["concurrency_ns"].pop(0, 0)  # between the first and last GPU event
    return result


def copy_stats(trace: Trace) -> list[dict[str, Any]]:
    rows = []
    for kind in COPY_KINDS:
        for detail in np.unique(trace.detail[trace.kind == kind]):
            on = (trace.kind == kind) & (trace.detail == detail)
            nbytes, dur = trace.nbytes[on].astype(np.float64), trace.dur[on].astype(np.float64)
            rate = nbytes[dur > 0] / dur[dur > 0]  # bytes/ns == GB/s
            rows.append(
                {
                    "kind": KINDS[kind],
                    "memory": trace.names[int(detail)],
                    "count": int(on.sum()),
                    "bytes": int(nbytes.sum()),
                    "total_us": dur.sum() / 1e3,
                    "mean_gbps": float(nbytes.sum() / dur.sum()) if dur.sum() else None,
                    "median_gbps": float(np.median(rate)) if rate.size else None,
                }
            )
    return rows


def hints(
    copies: list[dict[str, Any]], ovl: dict[str, Any], streams: list[dict[str, Any]]
) -> list[str]:
    found = []
    pageable = [c for c in copies if "Pageable" in c["memory"]]
    if pageable:
        count = sum(c["count"] for c in pageable)
        found.append(
            f"{count} copies use pageable host memory: they are staged and synchronous, so "
            "they cannot overlap compute — allocate pinned buffers (pin_memory / cudaHostAlloc)."
        )
    hidden = ovl.get("hidden_percent")
    if hidden is not None and hidden < 10 and len(streams) > 1:
        found.append(
            f"Only {hidden:.0f}% of copy time is hidden behind kernels: copies and compute are "
            "serialized — issue H2D for batch i+1 on another stream while batch i computes."
        )
    elif hidden is not None and hidden < 10:
        found.append(
            "All GPU work runs on one stream, so copies cannot overlap kernels: use ≥2 streams."
        )
    return found


def trace_stats(trace: Trace) -> dict[str, Any]:
    kinds = {
        KINDS[int(k)]: int(c)
        for k, c in zip(*np.unique(trace.kind, return_counts=True), strict=True)
    }
    start, end = trace.span()
    kernels, streams, ovl, copies = (
        kernel_table(trace),
        stream_stats(trace),
        overlap(trace),
        copy_stats(trace),
    )
    return {
        "source": trace.meta.get("source", ""),
        "format": trace.meta.get("format", ""),
        "version": trace.meta.get("version", ""),
        "events": len(trace),
        "lanes": len(trace.lanes),
        "span_us": (end - start) / 1e3,
        "kinds": kinds,
        "kernels": kernels,
        "streams": streams,
        "overlap": ovl,
        "copies": copies,
        "hints": hints(copies, ovl, streams),
    }
