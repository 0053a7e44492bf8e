"""What the Timeline panel runs off the UI thread when a trace opens: import and index (with
partial views while a large file loads), then the statistics."""

from __future__ import annotations

import time
from collections.abc import Callable

from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.links import node_latency
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.model import Trace
from deploylens.core.trace.stats import trace_stats
from deploylens.core.trace.stats_types import TraceStats


def open_trace(
    path: str, partial: Callable[[tuple[Trace, TimelineIndex]], None] | None = None
) -> tuple[Trace, TimelineIndex, float]:
    """Import and index (off the UI thread): all the first paint needs. ``partial`` gets the
    trace read so far, indexed, while a large file loads (the first after ~1.5 s)."""
    started = time.perf_counter()
    shown = (lambda trace: partial((trace, TimelineIndex(trace)))) if partial else None
    trace = load_trace(path, partial=shown)
    index = TimelineIndex(trace)
    return trace, index, time.perf_counter() - started


def summarize(trace: Trace) -> tuple[TraceStats, dict[str, float]]:
    """Statistics and per-node latency (off the UI thread, after the first paint: ~0.5 s per
    1M events that the user need not wait for to start looking)."""
    return trace_stats(trace), node_latency(trace)
