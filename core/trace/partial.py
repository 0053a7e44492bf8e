"""Partial views while a large trace loads (the way Perfetto's UI streams): the trace read so
far, handed over once loading has taken FIRST_VIEW_S and again each time the events have
doubled, until PARTIAL_UNTIL of the input is read — so the views cost at most about one more
build of half the trace, and none is made for a file that loads at once."""

from __future__ import annotations

import time
from collections.abc import Callable

from deploylens.core.trace.model import Trace

FIRST_VIEW_S = 1.0
PARTIAL_UNTIL = 0.6  # past this share of the input the end is near: no more views


class PartialViews:
    def __init__(self, partial: Callable[[Trace], None], snapshot: Callable[[], Trace]) -> None:
        self.partial, self.snapshot = partial, snapshot
        self.started = time.perf_counter()
        self.shown = 0

    def __call__(self, events: int, fraction: float) -> None:
        """``events`` read so far, ``fraction`` of the input behind them."""
        if (
            events >= max(2 * self.shown, 1)
            and fraction < PARTIAL_UNTIL
            and time.perf_counter() - self.started >= FIRST_VIEW_S
        ):
            self.shown = events
            self.partial(self.snapshot())
