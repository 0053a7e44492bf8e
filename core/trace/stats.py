"""What the timeline's questions need, computed on the columnar arrays: per-kernel latency,
per-stream busy %, copy/compute overlap, concurrency, idle gaps, copy bandwidth and hints."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from deploylens.core.trace.diagnosis import diagnosis
from deploylens.core.trace.intervals import merged
from deploylens.core.trace.model import COPY_KINDS, GPU_KINDS, KIND, KINDS, Trace, member
from deploylens.core.trace.pipeline import PIPELINED
from deploylens.core.trace.stats_types import (
    CopyRow,
    Gap,
    KernelRow,
    Overlap,
    StreamRow,
    TraceStats,
)

DUR_BITS = 40  # a kernel shorter than 2**40 ns (18 min) sorts as one int64 with its name id


def table_kind(trace: Trace) -> str:
    """What the per-name table counts: GPU kernels, else ONNX Runtime nodes, else CPU ops (a
    PyTorch CPU profile, the tool's own ``profile --backend torch``, had no table at all)."""
    for kind in ("kernel", "ort_node", "cpu_op"):
        if (trace.kind == KIND[kind]).any():
            return kind
    return "kernel"


def kernel_table(trace: Trace) -> list[KernelRow]:
    """Per-name latency of GPU kernels, or of ONNX Runtime nodes or CPU ops in a trace without
    kernels (``gpu_percent`` is then the share of their summed time; CPU ops nest, so theirs is
    inclusive time). One sort and one grouped pass: the cost does not grow with the number of
    distinct names (a percentile call per name made 50,000 names ~100x slower than 50)."""
    names, first, durations = _sorted_by_name(trace, trace.kind == KIND[table_kind(trace)])
    if not names.size:
        return []
    count = np.diff(np.append(first, durations.size))
    total = np.add.reduceat(durations, first).astype(np.float64)  # exact int64 sums per name
    share = 100.0 / (float(total.sum()) or 1.0)
    us = [  # every column at once, in microseconds; the rows below only gather them
        column / 1e3
        for column in (
            total,
            total / count,
            *(_sorted_percentile(durations, first, count, q) for q in (50, 90, 99)),
            durations[first].astype(np.float64),
            durations[first + count - 1].astype(np.float64),
        )
    ]
    percent = (total * share).tolist()
    rows = [
        KernelRow(trace.names[name_id], n, t, mean, p50, p90, p99, low, high, pct)
        for name_id, n, t, mean, p50, p90, p99, low, high, pct in zip(
            names.tolist(),
            count.tolist(),
            *(column.tolist() for column in us),
            percent,
            strict=True,
        )
    ]
    rows.sort(key=lambda r: -r.total_us)
    return rows


def _sorted_by_name(trace: Trace, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(name ids, index of each name's first event, durations sorted by (name, duration)):
    one sort for the whole table."""
    durations = trace.dur[mask]
    if not durations.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if int(durations.max()) < (1 << DUR_BITS) and int(durations.min()) >= 0:
        # (name, duration) sorted as one int64 key, in place: 8 bytes per kernel in all
        key = trace.name[mask].astype(np.int64)
        key <<= DUR_BITS
        key |= durations
        del durations
        key.sort()
        name = key >> DUR_BITS
        key &= (1 << DUR_BITS) - 1
        sorted_durations = key
    else:
        order = np.lexsort((durations, trace.name[mask]))
        name = trace.name[mask][order].astype(np.int64)
        sorted_durations = durations[order].astype(np.int64)
    first = np.flatnonzero(np.diff(name, prepend=name[0] - 1))
    return name[first], first, sorted_durations


def _sorted_percentile(
    values: np.ndarray, first: np.ndarray, count: np.ndarray, q: float
) -> np.ndarray:
    """numpy's default ("linear") percentile of every group at once, each group sorted
    ascending and starting at ``first``; the interpolation is numpy's own, so the figures
    equal ``np.percentile`` per group."""
    position = (count - 1) * (q / 100.0)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, count - 1)
    t = position - below
    a = values[first + below].astype(np.float64)
    b = values[first + above].astype(np.float64)
    diff = b - a
    result: np.ndarray = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
    return result


def _gpu_lanes(trace: Trace) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """(lane id, start, end, kind) of the GPU work on each lane, one lane slice at a time: the
    trace is sorted by lane, so no temporary is ever the size of the whole trace."""
    bounds = np.searchsorted(trace.lane, np.arange(len(trace.lanes) + 1, dtype=trace.lane.dtype))
    for lane_id in range(len(trace.lanes)):
        a, b = int(bounds[lane_id]), int(bounds[lane_id + 1])
        if a == b:
            continue
        kind = trace.kind[a:b]
        gpu = member(kind, GPU_KINDS)
        if gpu.any():
            start = trace.start[a:b][gpu]
            yield lane_id, start, start + trace.dur[a:b][gpu], kind[gpu]


def stream_stats(trace: Trace) -> list[StreamRow]:
    span = _gpu_span(trace)
    if span is None:
        return []
    rows = []
    for lane_id, start, end, _ in _gpu_lanes(trace):
        lane = trace.lanes[lane_id]
        s, e = merged(start, end)
        rows.append(
            StreamRow(
                lane=lane.title,
                device=lane.device,
                stream=lane.stream,
                events=int(start.size),
                busy_percent=100.0 * float((e - s).sum()) / max(span[1] - span[0], 1),
            )
        )
    return rows


def _gpu_span(trace: Trace, device: int | None = None) -> tuple[int, int] | None:
    """First start and last end of the GPU work (on one device), one lane slice at a time."""
    first, last = None, None
    for lane_id, start, end, _ in _gpu_lanes(trace):
        if device is None or trace.lanes[lane_id].device == device:
            first = int(start.min()) if first is None else min(first, int(start.min()))
            last = int(end.max()) if last is None else max(last, int(end.max()))
    return None if first is None else (first, last)  # type: ignore[return-value]


# Edges of a sweep are one sorted int64 each: (time − origin)·4 + tag. At equal times ends sort
# before starts, so intervals that only touch never count as overlapping.
_KERNEL_END, _COPY_END, _KERNEL_START, _COPY_START = range(4)
SWEEP_BLOCK = 1 << 16  # edges per vector step: bounded temporaries whatever the trace size


Parts = Callable[[], Iterator[tuple[np.ndarray, np.ndarray, int, int]]]


def _edges(parts: Parts, origin: int) -> np.ndarray:
    """Sorted codes of the timed intervals ``(start, end, start_tag, end_tag)`` that ``parts()``
    yields, written into one preallocated array: ``parts`` is called twice (to count, then to
    fill), so only one lane's pieces and 8 bytes per edge are alive at a time."""
    code = np.empty(2 * sum(int(np.count_nonzero(e > s)) for s, e, _, _ in parts()), np.int64)
    at = 0
    for start, end, start_tag, end_tag in parts():
        timed = end > start  # an instant adds no time, and its end would sort before its start
        for times, tag in ((start[timed], start_tag), (end[timed], end_tag)):
            out = code[at : at + times.size]
            np.subtract(times, origin, out=out)
            out *= 4
            out += tag
            at += times.size
    code.sort()
    return code


def _blocks(code: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(tags of edges i, spans t[i+1] − t[i]) block by block over a sorted edge array."""
    for a in range(0, code.size - 1, SWEEP_BLOCK):
        block = code[a : min(a + SWEEP_BLOCK, code.size - 1) + 1]
        yield block[:-1] & 3, np.diff(block >> 2)


Lanes = Callable[[], Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]


def _hidden_copy_ns(lanes: Lanes, origin: int) -> int:
    """Copy time during which some kernel of the device runs: Σ over time of (copies in
    flight) × [any kernel running] — each copy's covered part, summed."""

    def parts() -> Iterator[tuple[np.ndarray, np.ndarray, int, int]]:
        for start, end, kind in lanes():
            kernel, copy = kind == KIND["kernel"], member(kind, COPY_KINDS)
            yield start[kernel], end[kernel], _KERNEL_START, _KERNEL_END
            yield start[copy], end[copy], _COPY_START, _COPY_END

    code = _edges(parts, origin)
    hidden, kernels, copies = 0, 0, 0
    for tag, spans in _blocks(code):
        k = kernels + np.cumsum((tag == _KERNEL_START).astype(np.int32) - (tag == _KERNEL_END))
        c = copies + np.cumsum((tag == _COPY_START).astype(np.int32) - (tag == _COPY_END))
        hidden += int((spans * c * (k > 0)).sum())
        kernels, copies = int(k[-1]), int(c[-1])
    return hidden


def _busy_streams(lanes: Lanes, origin: int) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Time (ns) with k streams busy at once (a stream counts once however its work nests),
    and the largest idle gaps as (start, length)."""

    def parts() -> Iterator[tuple[np.ndarray, np.ndarray, int, int]]:
        for start, end, _ in lanes():
            yield (*merged(start, end), _KERNEL_START, _KERNEL_END)

    code = _edges(parts, origin)
    concurrency: dict[int, int] = {}
    gaps: list[tuple[int, int]] = []
    level, at = 0, 0
    for tag, spans in _blocks(code):
        busy = level + np.cumsum((tag == _KERNEL_START).astype(np.int32) * 2 - 1)
        totals = np.bincount(busy, weights=spans)  # exact: each block's sums stay < 2**53
        for k in np.flatnonzero(np.bincount(busy)).tolist():
            concurrency[k] = concurrency.get(k, 0) + int(totals[k])
        idle = np.flatnonzero((busy == 0) & (spans > 0))
        for i in idle[np.argsort(-spans[idle], kind="stable")[:5]].tolist():
            gaps.append((int(code[at + i] >> 2) + origin, int(spans[i])))
        gaps = sorted(gaps, key=lambda g: (-g[1], g[0]))[:5]
        level, at = int(busy[-1]), at + tag.size
    return concurrency, gaps


def overlap(trace: Trace) -> Overlap:
    """Share of copy time hidden behind kernels on other streams of the same device, plus the
    concurrency histogram (time with k streams busy at once) and the largest idle gaps.

    Each question is one sweep over sorted edges in fixed-size blocks, so the temporaries are
    8 bytes per edge plus a block — not merged copies of every column."""
    result = Overlap()
    devices = sorted({trace.lanes[lane_id].device for lane_id, _, _, _ in _gpu_lanes(trace)})
    for device in devices:
        origin = _gpu_span(trace, device)[0]  # type: ignore[index]

        def lanes(device: int = device) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
            for lane_id, start, end, kind in _gpu_lanes(trace):
                if trace.lanes[lane_id].device == device:
                    yield start, end, kind

        for start, end, kind in lanes():
            copy = member(kind, COPY_KINDS)
            result.copy_ns += int((end[copy] - start[copy]).sum())
        result.hidden_ns += _hidden_copy_ns(lanes, origin)
        concurrency, gaps = _busy_streams(lanes, origin)
        for k, ns in concurrency.items():
            result.concurrency_ns[k] = result.concurrency_ns.get(k, 0) + ns
        result.gaps += [Gap(device, int(start), length / 1e3) for start, length in gaps]
    result.hidden_percent = 100.0 * result.hidden_ns / result.copy_ns if result.copy_ns else None
    result.idle_ns = result.concurrency_ns.pop(0, 0)  # between the first and last GPU event
    return result


def copy_stats(trace: Trace) -> list[CopyRow]:
    rows = []
    for kind in COPY_KINDS:
        for detail in np.unique(trace.detail[trace.kind == kind]):
            on = (trace.kind == kind) & (trace.detail == detail)
            nbytes, dur = trace.nbytes[on].astype(np.float64), trace.dur[on].astype(np.float64)
            rate = nbytes[dur > 0] / dur[dur > 0]  # bytes/ns == GB/s
            rows.append(
                CopyRow(
                    kind=KINDS[kind],
                    memory=trace.names[int(detail)],
                    count=int(on.sum()),
                    bytes=int(nbytes.sum()),
                    total_us=float(dur.sum()) / 1e3,
                    mean_gbps=float(nbytes.sum() / dur.sum()) if dur.sum() else None,
                    median_gbps=float(np.median(rate)) if rate.size else None,
                )
            )
    return rows


def hints(
    copies: list[CopyRow],
    ovl: Overlap,
    streams: list[StreamRow],
    capture: dict[str, Any] | None = None,
) -> list[str]:
    """Advice from the copy and overlap figures — never advice the capture already followed
    (``capture`` is what DeployLens's own capture did, from ``TRACE.capture.json``)."""
    capture = capture or {}
    found = []
    pageable = [c for c in copies if "Pageable" in c.memory]
    hidden = ovl.hidden_percent
    if pageable:
        count = sum(c.count for c in pageable)
        if hidden is not None and hidden >= 50:  # the measurement wins over the rule of thumb
            found.append(
                f"{count:,} copies use pageable host memory; this trace still shows {hidden:.1f}% "
                "of copy time hidden behind kernels, so they did overlap here. Pinned buffers "
                "(pin_memory / cudaHostAlloc) would still skip the staging copy and free the "
                "host thread that waits on each one."
            )
        elif hidden is not None and hidden >= 10:  # some overlap was measured: say so
            found.append(
                f"{count:,} copies use pageable host memory; {hidden:.1f}% of this trace's copy "
                "time is hidden behind kernels, so copies did overlap in part — but each pageable "
                "copy is staged through a pinned buffer and holds its host thread: pinned buffers "
                "(pin_memory / cudaHostAlloc) would let more of it overlap."
            )
        else:
            found.append(
                f"{count:,} copies use pageable host memory: they are staged and synchronous, so "
                "they cannot overlap compute"
                + (
                    f" (this trace: {hidden:.1f}% of copy time hidden)"
                    if hidden is not None
                    else ""
                )
                + " — allocate pinned buffers (pin_memory / cudaHostAlloc)."
            )
    host = any(c.kind in ("memcpy_h2d", "memcpy_d2h") for c in copies)
    if not host:  # only device-side copies (D2D, P2P): no host transfer to pipeline
        return found
    if hidden is not None and hidden < 10 and capture.get("mode") in PIPELINED:
        found.append(
            f"Only {hidden:.0f}% of copy time is hidden behind kernels although the capture "
            "pipelined the copies on their own streams: each batch's compute is too short to "
            "cover its copies, or leaves the GPU idle between launches (see the diagnosis)."
        )
    elif hidden is not None and hidden < 10 and len(streams) > 1:
        found.append(
            f"Only {hidden:.0f}% of copy time is hidden behind kernels: copies and compute are "
            "serialized — issue H2D for batch i+1 on another stream while batch i computes "
            "(deploylens profile --mode pipelined)."
        )
    elif hidden is not None and hidden < 10:
        found.append(
            "All GPU work runs on one stream, so copies cannot overlap kernels: put the copies "
            "on streams of their own (deploylens profile --mode pipelined)."
        )
    return found


def trace_stats(trace: Trace) -> TraceStats:
    """Every figure the timeline shows of ``trace`` (a whole file, or a range's events)."""
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
    return TraceStats(
        source=str(trace.meta.get("source", "")),
        format=str(trace.meta.get("format", "")),
        version=str(trace.meta.get("version", "")),
        events=len(trace),
        lanes=len(trace.lanes),
        span_us=(end - start) / 1e3,
        kinds=kinds,
        table=table_kind(trace),
        kernels=kernels,
        streams=streams,
        overlap=ovl,
        copies=copies,
        hints=hints(copies, ovl, streams, trace.meta.get("capture")),
        diagnosis=diagnosis(trace),
        unknown_categories=dict(trace.meta.get("unknown_categories", {})),
    )
