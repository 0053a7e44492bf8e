"""Partial views while a large trace loads (the way Perfetto's UI streams): the trace read so
far, handed over once FIRST_VIEW_EVENTS events are decoded and again each time the events have
doubled — but not before VIEW_PACE times the last view's own cost has passed, so views take at
most about a fifth of the load (a 10M-event trace made four views that cost 6–8 s of a 14–18 s
import) — until PARTIAL_UNTIL of the input is read.

The first view is paced by work, not by the clock: on a loaded machine a timer fired after a
share of the file that varied with the load, so the first paint of a 10M-event trace came
whenever; counted in events it costs what opening a trace of that size costs, whatever the
machine is doing. A file smaller than FIRST_VIEW_EVENTS / PARTIAL_UNTIL gets no partial view:
it loads whole about as fast as a view of it would."""

from __future__ import annotations

import time
from collections.abc import Callable

from deploylens.core.trace.model import Trace

FIRST_VIEW_EVENTS = 1_000_000  # a first view costs about what opening a 1M-event trace does
PARTIAL_UNTIL = 0.6  # past this share of the input the end is near: no more views
VIEW_PACE = 4.0  # after a view that took t seconds, loading runs ≥ VIEW_PACE × t before the next


class PartialViews:
    def __init__(
        self,
        partial: Callable[[Trace], None],
        snapshot: Callable[[], Trace],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.partial, self.snapshot, self.clock = partial, snapshot, clock
        self.shown = 0
        self.next_at = float("-inf")  # only the events gate the first view

    def __call__(self, events: int, fraction: float) -> None:
        """``events`` read so far, ``fraction`` of the input behind them."""
        if events < max(2 * self.shown, FIRST_VIEW_EVENTS) or fraction >= PARTIAL_UNTIL:
            return
        now = self.clock()
        if now >= self.next_at:
            self.shown = events
            self.partial(self.snapshot())
            done = self.clock()
            self.next_at = done + VIEW_PACE * (done - now)
