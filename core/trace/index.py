"""What the timeline asks of a trace, answered on arrays in O(log n) per row: which events are
visible in a time window, which event is under the mouse, an event's details (correlated API
call, NVTX parents, bandwidth), name search and the events of a time range.

Lanes are put in display order first — GPU devices and their streams before the host's
processes and threads, as Nsight Systems and Perfetto show them — and a stream that both runs
kernels and copies gets a kernels row and a memory row (Nsight's per-stream rows). Nested events
(CPU ops, NVTX ranges) get a depth within their lane and each (lane, depth) is a *row*.
Within a row events are sorted by start and their ends (or, where nesting makes them fall
back, the running maximum of the ends) rise, so the first event that can reach into a
window is one binary search away — no scan, at any zoom."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np

from deploylens.core.trace.memory import release_free_memory
from deploylens.core.trace.model import COPY_KINDS, GPU_KINDS, KIND, Event, Lane, Trace, member

MAX_DEPTH = 12
# Rows with at least this many events get a coverage grid (below it, painting events is cheap).
COVERAGE_MIN_EVENTS = 4096
COVERAGE_MAX_BINS = 1 << 18  # a 10M-event row: 256k bins × kinds × 4 B (~4 MB)


class Coverage:
    """Busy time of one row, per kind, at fixed grid points: ``cum[k, j]`` is how many ns of
    kind ``kinds[k]`` lie in ``[origin, origin + j * step]``. Any pixel's busy fraction is then
    two interpolations, whatever the event count — the zoomed-out view costs O(width) per row.

    Every event counts for at least a quarter bin, so instants and 1 ns kernels stay visible
    (the event path gives them 0.05 px). float32 suffices: its error is ~1e-4 of a pixel's
    time once a pixel spans ≥ 8 bins, the only case the painter uses it for."""

    def __init__(
        self, start: np.ndarray, dur: np.ndarray, kind: np.ndarray, origin: int, span: int
    ) -> None:
        bins = min(COVERAGE_MAX_BINS, 1 << max(int(start.size // 2 - 1).bit_length(), 4))
        self.origin, self.step = origin, max(span / bins, 1e-9)
        grid = np.arange(bins + 1, dtype=np.float64) * self.step
        self.kinds = np.unique(kind)
        self.cum = np.empty((self.kinds.size, bins + 1), np.float32)
        for k, kind_id in enumerate(self.kinds):
            on = kind == kind_id
            s = (start[on] - origin).astype(np.float64)  # start-sorted within the row
            e = np.sort(s + np.maximum(dur[on], self.step / 4), kind="stable")  # nearly sorted
            # Σ over events of overlap with [0, g] = Σ_{s<g} (g - s) - Σ_{e<g} (g - e)
            n_s, n_e = np.searchsorted(s, grid), np.searchsorted(e, grid)
            sum_s = np.concatenate([[0.0], np.cumsum(s)])[n_s]
            sum_e = np.concatenate([[0.0], np.cumsum(e)])[n_e]
            self.cum[k] = grid * (n_s - n_e) - sum_s + sum_e

    def busy(self, t0: int, t1: int, width: int) -> np.ndarray:
        """(kinds, width) busy fraction of each pixel column of [t0, t1]."""
        edges = (t0 - self.origin + np.arange(width + 1) * ((t1 - t0) / width)) / self.step
        edges = np.clip(edges, 0, self.cum.shape[1] - 1)
        i = np.minimum(edges.astype(np.int64), self.cum.shape[1] - 2)
        f = (edges - i).astype(np.float32)
        at = self.cum[:, i] * (1 - f) + self.cum[:, i + 1] * f
        result: np.ndarray = np.diff(at, axis=1) * np.float32(width / (t1 - t0))
        return result


@dataclass(frozen=True)
class EventDetails:
    """What the details pane shows of one event: the event, where it starts in the capture,
    its copy bandwidth, its correlated partner (a kernel's launch) and its enclosing ranges."""

    event: Event
    relative_start_us: float
    bandwidth_gbps: float | None  # bytes / ns of a copy (None: not a copy, or no duration)
    correlated: Event | None
    correlated_index: int  # -1: none
    parents: list[str]  # the NVTX ranges and CPU ops around it, outermost first


class TimelineIndex:
    """Built once per trace; note that it puts the trace's rows in (lane, depth, start) order,
    so event indices taken before it was built no longer apply."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        order_lanes(trace)
        n, lanes = len(trace), len(trace.lanes)
        end = trace.start + trace.dur
        bounds = np.searchsorted(trace.lane, np.arange(lanes + 1, dtype=trace.lane.dtype))
        depth = np.zeros(n, np.int32)
        memory_row = np.full(lanes, -1, np.int32)  # the first memory row of a split stream
        memory = member(trace.kind, (*COPY_KINDS, KIND["memset"])) if n else np.zeros(0, bool)
        for lane in range(lanes):
            a, b = int(bounds[lane]), int(bounds[lane + 1])
            if b - a <= 1:
                continue
            mem = memory[a:b]
            split = bool(mem.any() and (trace.kind[a:b] == KIND["kernel"]).any())
            parts = [np.flatnonzero(~mem), np.flatnonzero(mem)] if split else [np.arange(b - a)]
            offset = 0
            for number, part in enumerate(parts):
                starts = trace.start[a:b][part]
                ends = np.sort(end[a:b][part], kind="stable")  # timsort: ends nearly sorted
                open_before = np.arange(part.size) - np.searchsorted(ends, starts, "right")
                levels = np.clip(open_before, 0, MAX_DEPTH - 1)
                depth[a + part] = offset + levels
                if number == 1:
                    memory_row[lane] = offset
                offset += int(levels.max()) + 1 if part.size else 0
        self.lane_depth = np.ones(lanes, np.int32)
        if n:
            np.maximum.at(self.lane_depth, trace.lane, depth + 1)
        self.memory_row = memory_row
        self.lane_first_row = np.concatenate([[0], np.cumsum(self.lane_depth)]).astype(np.int32)
        self.rows = int(self.lane_first_row[-1])
        self.row_lane = np.repeat(np.arange(lanes), self.lane_depth).astype(np.int32)
        self.row_depth = (np.arange(self.rows) - self.lane_first_row[self.row_lane]).astype(
            np.int32
        )
        event_row = (self.lane_first_row[trace.lane] + depth).astype(np.int32) if n else depth
        del depth, end
        # The trace itself is put in row order — (lane, depth, start): still grouped by lane —
        # so a row is a contiguous slice of the trace's own arrays: the index keeps no
        # permutation, no second copy of the start times and no row per event.
        order = np.lexsort((trace.start, event_row))
        if n and np.any(order != np.arange(n)):
            trace.reorder(order)
            event_row = event_row[order]
        del order
        self.row_bounds = np.searchsorted(
            event_row, np.arange(self.rows + 1, dtype=event_row.dtype)
        )
        del event_row
        # Where a row's ends do not rise with its starts (nested ranges that share a depth), the
        # running maximum of the ends keeps the window search O(log n); elsewhere the ends
        # themselves are searched, so the usual row (a stream, a flat thread) costs no memory.
        self._end_max: dict[int, np.ndarray] = {}
        for row in range(self.rows):
            a, b = int(self.row_bounds[row]), int(self.row_bounds[row + 1])
            if b - a > 1:
                ends = trace.start[a:b] + trace.dur[a:b]
                if np.any(ends[1:] < ends[:-1]):
                    self._end_max[row] = np.maximum.accumulate(ends)
        self.span = trace.span()
        self._gpu_lane = _lane_has_gpu(trace)
        self._name_hits: dict[str, np.ndarray] = {}
        self.coverage: dict[int, Coverage] = {}
        for dense in np.flatnonzero(np.diff(self.row_bounds) >= COVERAGE_MIN_EVENTS).tolist():
            a, b = int(self.row_bounds[dense]), int(self.row_bounds[dense + 1])
            self.coverage[dense] = Coverage(
                trace.start[a:b],
                trace.dur[a:b],
                trace.kind[a:b],
                self.span[0],
                max(self.span[1] - self.span[0], 1),
            )
        release_free_memory()  # the old column order and the temporaries above

    # -- windows -----------------------------------------------------------------------------
    def _window(self, row: int, t0: int, t1: int) -> tuple[int, int]:
        """Trace slice [lo, hi) of the row's events that may overlap [t0, t1] (closed: an event
        ending at t0 touches it), in O(log n): before ``lo`` everything ended before t0, from
        ``hi`` on everything starts after t1."""
        a, b = int(self.row_bounds[row]), int(self.row_bounds[row + 1])
        start, dur = self.trace.start, self.trace.dur
        end_max = self._end_max.get(row)
        if end_max is not None:
            lo = a + int(np.searchsorted(end_max, t0, "left"))
        else:  # ends rise with starts: bisect them without building them
            lo = bisect.bisect_left(range(b), t0, a, b, key=lambda i: start[i] + dur[i])
        hi = a + int(np.searchsorted(start[a:b], t1, "right"))
        return lo, hi

    def row_of(self, event: int) -> int:
        """The row an event is painted in."""
        return int(np.searchsorted(self.row_bounds, event, "right")) - 1

    def visible(self, row: int, t0: int, t1: int) -> np.ndarray:
        """Indices (into the trace) of the row's events overlapping [t0, t1], by start."""
        lo, hi = self._window(row, t0, t1)
        if hi <= lo:
            return np.zeros(0, np.int64)
        trace = self.trace
        return lo + np.flatnonzero(trace.start[lo:hi] + trace.dur[lo:hi] >= t0)

    def visible_count(self, row: int, t0: int, t1: int) -> int:
        """An upper bound on ``visible(row, t0, t1).size``, in O(log n)."""
        lo, hi = self._window(row, t0, t1)
        return max(hi - lo, 0)

    def event_at(self, row: int, t: int, tolerance: int) -> int:
        """The event under ``t`` (± ``tolerance`` ns) in ``row``: the one containing ``t``,
        else the nearest; -1 when none."""
        if not 0 <= row < self.rows:
            return -1
        near = self.visible(row, t - tolerance, t + tolerance)
        if not near.size:
            return -1
        trace = self.trace
        start, end = trace.start[near], trace.start[near] + trace.dur[near]
        distance = np.where(t < start, start - t, np.where(t > end, t - end, 0))
        return int(near[np.lexsort((trace.dur[near], distance))[0]])

    def in_range(self, t0: int, t1: int) -> np.ndarray:
        """Every event overlapping [t0, t1] (for the range statistics and a range export)."""
        parts = [self.visible(row, t0, t1) for row in range(self.rows)]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    # -- details -----------------------------------------------------------------------------
    def partner(self, index: int) -> int:
        """The other end of a correlation: a GPU event's API call, or an API call's GPU work."""
        trace = self.trace
        corr = int(trace.corr[index])
        if corr < 0:
            return -1
        kind = int(trace.kind[index])
        wanted = [KIND["cuda_api"]] if kind in GPU_KINDS else list(GPU_KINDS)
        if kind not in GPU_KINDS and kind != KIND["cuda_api"]:
            return -1
        hits = np.flatnonzero((trace.corr == corr) & member(trace.kind, wanted))
        hits = hits[hits != index]
        return int(hits[0]) if hits.size else -1

    def parents(self, index: int) -> list[int]:
        """NVTX/annotation ranges around the event, outermost first: on its own stream or
        thread, and — for GPU work — around the API call that queued it."""
        trace = self.trace
        found: list[int] = []
        for event in (index, self.partner(index)):
            if event < 0:
                continue
            lane = trace.lanes[int(trace.lane[event])]
            t0, t1 = int(trace.start[event]), int(trace.start[event] + trace.dur[event])
            ranges = (trace.kind == KIND["nvtx"]) | (
                (trace.kind == KIND["cpu_op"]) & (trace.lane == trace.lane[event])
            )
            candidates = np.flatnonzero(
                ranges & (trace.start <= t0) & (trace.start + trace.dur >= t1)
            )
            same = [
                int(c)
                for c in candidates
                if int(c) != event and _related(trace.lanes[int(trace.lane[c])], lane)
            ]
            found += sorted(same, key=lambda c: -int(trace.dur[c]))
        return list(dict.fromkeys(found))

    def details(self, index: int) -> EventDetails:
        trace = self.trace
        event = trace.event(index)
        partner = self.partner(index)
        return EventDetails(
            event=event,
            relative_start_us=(event.start_ns - self.span[0]) / 1e3,
            bandwidth_gbps=event.bytes / event.dur_ns if event.bytes and event.dur_ns else None,
            correlated=trace.event(partner) if partner >= 0 else None,
            correlated_index=partner,
            parents=[trace.names[int(trace.name[p])] for p in self.parents(index)],
        )

    # -- search --------------------------------------------------------------------------------
    def matches(self, text: str) -> np.ndarray:
        """Events whose name contains ``text`` (case-insensitive), ordered by start."""
        key = text.strip().lower()
        if not key:
            return np.zeros(0, np.int64)
        if key not in self._name_hits:
            ids = [i for i, name in enumerate(self.trace.names) if key in name.lower()]
            hits = np.flatnonzero(member(self.trace.name, ids, len(self.trace.names)))
            self._name_hits[key] = hits[np.argsort(self.trace.start[hits], kind="stable")]
        return self._name_hits[key]

    def step(self, text: str, after: int, forward: bool = True) -> int:
        """The next (previous) match after (before) time ``after``, wrapping around; -1 if none."""
        hits = self.matches(text)
        if not hits.size:
            return -1
        starts = self.trace.start[hits]
        if forward:
            at = int(np.searchsorted(starts, after, "right"))
            return int(hits[at % hits.size])
        at = int(np.searchsorted(starts, after, "left")) - 1
        return int(hits[at % hits.size])

    def row_title(self, row: int) -> str:
        """The lane's title on its first row; a split stream's memory row says so."""
        lane_id = int(self.row_lane[row])
        lane = self.trace.lanes[lane_id]
        depth = int(self.row_depth[row])
        split = self.memory_row[lane_id] >= 0
        if depth == 0:
            return f"{lane.title} · kernels" if split else lane.title
        if split and depth == self.memory_row[lane_id]:
            return f"{lane.title} · memory"
        return ""

    def is_gpu_lane(self, lane_id: int) -> bool:
        return self.trace.lanes[lane_id].device >= 0 or bool(self._gpu_lane[lane_id])


def _lane_has_gpu(trace: Trace) -> np.ndarray:
    has = np.zeros(len(trace.lanes), bool)
    if len(trace):
        has[np.unique(trace.lane[member(trace.kind, GPU_KINDS)])] = True
    return has


def lane_sort_key(lane: Lane, gpu: bool) -> tuple[Any, ...]:
    """GPU devices and streams first (by device, then stream), then the host's processes and
    threads; an annotation lane right after the thread it annotates."""
    import re

    def natural(text: str) -> list[int | str]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]

    name = lane.name
    annotated = name.split(" ", 1)[1] if name.startswith(("annotations ", "NVTX ")) else name
    return (
        0 if gpu else 1,
        lane.device if lane.device >= 0 else 1 << 30,
        natural(lane.group),
        lane.stream if lane.stream >= 0 else 1 << 30,
        natural(annotated),
        annotated != name,
    )


def order_lanes(trace: Trace) -> None:
    """Renumber the trace's lanes in display order (GPU first) and keep it sorted by (lane,
    start): lane ids are labels, so statistics and exports are unaffected."""
    if not trace.lanes:
        return
    gpu = _lane_has_gpu(trace)
    wanted = sorted(
        range(len(trace.lanes)),
        key=lambda i: lane_sort_key(trace.lanes[i], bool(gpu[i] or trace.lanes[i].device >= 0)),
    )
    if wanted == list(range(len(trace.lanes))):
        return
    new_id = np.empty(len(wanted), np.int64)
    new_id[wanted] = np.arange(len(wanted))
    trace.lanes = [trace.lanes[i] for i in wanted]
    if len(trace):
        trace.lane = new_id[trace.lane].astype(trace.lane.dtype)
        trace.reorder(np.lexsort((trace.start, trace.lane)))


def _related(candidate: Any, lane: Any) -> bool:
    """A range belongs to an event on the same stream or thread (annotation lanes are named
    "annotations <stream/thread>" in Chrome traces, "NVTX <thread>" in nsys exports)."""
    return candidate == lane or (
        candidate.group == lane.group
        and candidate.name in (f"annotations {lane.name}", f"NVTX {lane.name}")
    )


GPU_WINDOW_BELOW = 0.25  # GPU work covering less of the trace than this opens zoomed onto it
GPU_WINDOW_SHARE = 0.75  # … onto the shortest stretch holding this share of the GPU's events


def gpu_window(trace: Trace) -> tuple[int, int] | None:
    """The shortest stretch holding 3/4 of the GPU's events (kernels, copies), padded by 2 %,
    when it is under a quarter of the trace: a 43 s capture whose kernels sit in its last second
    opened as 43 s of empty lanes (the weights' upload at 30 s must not stretch the view back).
    None when the GPU's work fills the trace, or there is none: the whole trace is the first
    view. F fits the whole trace either way."""
    if not len(trace):
        return None
    gpu = np.flatnonzero(member(trace.kind, GPU_KINDS))
    if not gpu.size:
        return None
    order = gpu[np.argsort(trace.start[gpu], kind="stable")]
    starts, ends = trace.start[order], trace.end[order]
    cumulative = np.arange(len(order) + 1, dtype=np.float64)  # one per event
    need = GPU_WINDOW_SHARE * cumulative[-1]
    # for each first event i, the fewest events i..j whose busy time reaches ``need``
    last = np.searchsorted(cumulative, cumulative[:-1] + need, side="left") - 1
    valid = last < len(order)
    if not valid.any():
        return None
    firsts = np.flatnonzero(valid)
    reach = np.maximum.accumulate(ends)[np.minimum(last[firsts], len(order) - 1)]
    widths = reach - starts[firsts]
    best = int(np.argmin(widths))
    lo, hi = int(firsts[best]), int(last[firsts[best]])
    first, end_at = int(starts[lo]), int(reach[best])
    # grow it over the same burst: neighbours closer than a tenth of its width join it
    gap = max((end_at - first) // 10, 1)
    while lo > 0 and first - int(ends[lo - 1]) <= gap:
        lo -= 1
        first = min(first, int(starts[lo]))
    while hi + 1 < len(order) and int(starts[hi + 1]) - end_at <= gap:
        hi += 1
        end_at = max(end_at, int(ends[hi]))
    start, stop = trace.span()
    if end_at - first >= GPU_WINDOW_BELOW * max(stop - start, 1):
        return None
    pad = max((end_at - first) // 50, 1)
    return max(start, first - pad), min(stop, end_at + pad)
