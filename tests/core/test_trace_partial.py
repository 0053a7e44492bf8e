"""Partial views while a large trace loads (core/trace/partial.py), for both readers that stream:
Chrome JSON (bytes read) and nsys SQLite (rows read). Made small here: the first view at once,
small steps. Each view is a real trace of the events read so far — fewer than the file's, all of
them in the complete trace — and the import's answer is the same with or without views."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.trace import chrome_file, nsys, partial
from deploylens.core.trace.export import write_chrome
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.model import Trace
from tests.helpers.synthetic_trace import make_trace, write_nsys_sqlite


@pytest.mark.parametrize("flavour", ["chrome", "nsys"])
def test_views_grow_and_the_answer_does_not_change(
    flavour: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partial, "FIRST_VIEW_EVENTS", 1)
    monkeypatch.setattr(partial, "VIEW_PACE", 0.0)
    monkeypatch.setattr(chrome_file, "SEQUENTIAL_CHUNK", 32 << 10)
    monkeypatch.setattr(nsys, "BATCH", 256)
    monkeypatch.setenv("DEPLOYLENS_IMPORT_WORKERS", "1")
    trace = make_trace(8000)
    path = (
        write_chrome(trace, tmp_path / "t.json")
        if flavour == "chrome"
        else write_nsys_sqlite(trace, tmp_path / "t.sqlite")
    )
    views: list[Trace] = []
    complete = load_trace(path, partial=views.append)
    plain = load_trace(path)
    assert np.array_equal(complete.start, plain.start) and complete.names == plain.names
    assert len(views) >= 3, len(views)
    sizes = [len(v) for v in views]
    assert sizes == sorted(sizes) and all(b >= 2 * a for a, b in itertools.pairwise(sizes))
    assert sizes[-1] < len(complete)  # none past PARTIAL_UNTIL of the input
    for view in views:
        assert set(view.start.tolist()) <= set(complete.start.tolist())
        assert all(lane in complete.lanes for lane in view.lanes)


def test_no_view_for_a_file_that_loads_at_once(tmp_path: Path) -> None:
    path = write_chrome(make_trace(2000), tmp_path / "t.json")
    views: list[Trace] = []
    load_trace(path, partial=views.append)
    assert views == []


def test_views_are_paced_by_their_own_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """A view that takes t seconds holds the next one back VIEW_PACE × t, whatever the growth:
    the views never cost more than about a fifth of the load. Driven with a fake clock."""
    monkeypatch.setattr(partial, "FIRST_VIEW_EVENTS", 1000)
    now = [100.0]
    shown: list[float] = []

    def slow_view(trace: Trace) -> None:
        shown.append(now[0])
        now[0] += 2.0  # each view costs 2 s

    views = partial.PartialViews(slow_view, lambda: make_trace(10), lambda: now[0])
    for events in range(1, 60):
        now[0] += 0.5  # a chunk read every 0.5 s, the events growing by 1000 each
        views(events * 1000, 0.01 * events)
    # the first at the first chunk; each next ≥ 8 s (4 × 2 s) after the last view ended
    gaps = [b - a for a, b in itertools.pairwise(shown)]
    assert shown[0] == 100.5 and len(shown) >= 3, shown
    assert all(gap >= 2.0 + 8.0 for gap in gaps), gaps


@pytest.mark.parametrize("seconds_per_chunk", [0.001, 5.0])
def test_the_first_view_waits_for_events_not_for_the_clock(
    seconds_per_chunk: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the chunks come slowly: the first view still comes at the same
    count of decoded events (a timer made it come after a share of the file that varied with
    the load). Driven with a fake clock, fast and 5000× slower."""
    monkeypatch.setattr(partial, "FIRST_VIEW_EVENTS", 250_000)
    now = [0.0]
    at: list[int] = []
    events = [0]

    def view(trace: Trace) -> None:
        at.append(events[0])

    views = partial.PartialViews(view, lambda: make_trace(10), lambda: now[0])
    for chunk in range(1, 100):
        now[0] += seconds_per_chunk
        events[0] = chunk * 10_000
        views(events[0], chunk / 100)
    assert at and at[0] == 250_000, at
