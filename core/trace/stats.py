"""What the timeline's questions need, computed on the columnar arrays: per-kernel latency,
per-stream busy %, copy/compute overlap, concurrency, idle gaps, copy bandwidth and hints."""

from __future__ import annotations

from typing import Any

import numpy as np

from deploylens.core.trace.model import COPY_KINDS, GPU_KINDS, KIND, KINDS, Trace


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint ``(starts, ends)``."""
    if start.size == 0:
        return start, end
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum.accumulate(end[order])
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > e[:-1]
    groups = np.cumsum(new) - 1
    return s[new], np.maximum.reduceat(e, np.flatnonzero(new)) if groups.size else e


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


def stream_stats(trace: Trace) -> list[dict[str, Any]]:
    gpu = np.isin(trace.kind, GPU_KINDS)
    if not gpu.any():
        return []
    first, last = int(trace.start[gpu].min()), int(trace.end[gpu].max())
    span = max(last - first, 1)
    rows = []
    for lane_id in np.unique(trace.lane[gpu]):
        lane = trace.lanes[int(lane_id)]
        on = gpu & (trace.lane == lane_id)
        s, e = merged(trace.start[on], trace.end[on])
        rows.append(
            {
                "lane": lane.title,
                "device": lane.device,
                "stream": lane.stream,
                "events": int(on.sum()),
                "busy_percent": 100.0 * float((e - s).sum()) / span,
            }
        )
    return rows


def overlap(trace: Trace) -> dict[str, Any]:
    """Share of copy time hidden behind kernels on other streams of the same device, plus the
    concurrency histogram (time with k streams busy at once) and the largest idle gaps."""
    result: dict[str, Any] = {"copy_ns": 0, "hidden_ns": 0, "concurrency_ns": {}, "gaps": []}
    devices = {
        trace.lanes[int(i)].device for i in np.unique(trace.lane[np.isin(trace.kind, GPU_KINDS)])
    }
    lane_device = np.array([lane.device for lane in trace.lanes] or [-1])
    for device in sorted(devices):
        on_device = lane_device[trace.lane] == device
        kernels = on_device & (trace.kind == KIND["kernel"])
        copies = on_device & np.isin(trace.kind, COPY_KINDS)
        ks, ke = merged(trace.start[kernels], trace.end[kernels])
        result["copy_ns"] += int(trace.dur[copies].sum())
        result["hidden_ns"] += int(covered(trace.start[copies], trace.end[copies], ks, ke).sum())
        busy = on_device & np.isin(trace.kind, GPU_KINDS)
        edges, deltas = [], []
        for lane_id in np.unique(trace.lane[busy]):
            s, e = merged(
                trace.start[busy & (trace.lane == lane_id)],
                trace.end[busy & (trace.lane == lane_id)],
            )
            edges += [s, e]
            deltas += [np.ones(s.size, np.int64), -np.ones(e.size, np.int64)]
        times, steps = np.concatenate(edges), np.concatenate(deltas)
        order = np.lexsort((steps, times))
        times, level = times[order], np.cumsum(steps[order])
        spans = np.diff(times)
        for k, t in zip(level[:-1], spans, strict=True):
            result["concurrency_ns"][int(k)] = result["concurrency_ns"].get(int(k), 0) + int(t)
        us, ue = merged(trace.start[busy], trace.end[busy])
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
