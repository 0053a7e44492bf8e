"""Partial views while a large trace loads (the way Perfetto's UI streams): the trace read so
far, handed over once loading has taken FIRST_VIEW_S and again each time the events have
doubled — but not before VIEW_PACE times the last view's own cost has passed, so views take at
most about a fifth of the load (a 10M-event trace made four views that cost 6–8 s of a 14–18 s
import) — until PARTIAL_UNTIL of the input is read. None is made for a file that loads at
once."""

from __future__ import annotations

import time
from collections.abc import Callable

from deploylens.core.trace.model import Trace

FIRST_VIEW_S = 1.0
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
        self.next_at = clock() + FIRST_VIEW_S

    def __call__(self, events: int, fraction: float) -> None:
        """``events`` read so far, ``fraction`` of the input behind them."""
        now = self.clock()
        if events >= max(2 * self.shown, 1) and fraction < PARTIAL_UNTIL and now >= self.next_at:
            self.shown = events
            self.partial(self.snapshot())
            done = self.clock()
            self.next_at = done + VIEW_PACE * (done - now)
