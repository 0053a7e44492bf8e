"""Opening a Chrome-trace-shaped file: on every core when it is large (chrome_parallel), chunk by
chunk in this process otherwise — the same trace either way (chrome's columns, merged in file
order)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.trace import chrome, chrome_parallel
from deploylens.core.trace.json_stream import CHUNK, iter_chunks
from deploylens.core.trace.model import BadTraceValue, Trace


def _load(
    path: Path,
    state: chrome.ChromeImport,
    progress: Callable[[int, str], None] | None,
    report: Callable[[int], None] | None,
) -> Trace:
    """On every core for a large file (chrome_parallel), else chunk by chunk here."""
    if chrome_parallel.worth_it(path):
        if chrome_parallel.load_parallel(path, state, report, chrome_parallel.workers()):
            return state.finish(path)
        state.restart()  # a cut fell inside a string: the sequential reader decides
        if progress is not None:
            progress(0, "reading again in one process")
    for events in iter_chunks(path, chrome.decode_events, report, SEQUENTIAL_CHUNK):
        state.add(events)
    return state.finish(path)


SEQUENTIAL_CHUNK = CHUNK  # bytes decoded per step in this process
FIRST_VIEW_S = 1.5  # a partial view once loading has taken this long (Perfetto-like)
PARTIAL_UNTIL = 0.6  # no more partial views past this share of the file: the end is near


class _Partial:
    """Calls ``partial(trace so far)`` once loading passes FIRST_VIEW_S, then each time the
    events read have doubled, until PARTIAL_UNTIL of the file is read: the views cost at most
    about one more build of half the trace."""

    def __init__(self, path: Path, state: chrome.ChromeImport, partial: Callable[[Trace], None]):
        self.path, self.state, self.partial = path, state, partial
        self.size = max(path.stat().st_size, 1)
        self.started = time.perf_counter()
        self.shown = 0

    def __call__(self, done: int) -> None:
        events = len(self.state.builder)
        if (
            events >= max(2 * self.shown, 1)
            and done / self.size < PARTIAL_UNTIL
            and time.perf_counter() - self.started >= FIRST_VIEW_S
        ):
            self.shown = events
            self.partial(self.state.snapshot(self.path))


def load_chrome(
    path: str | Path,
    progress: Callable[[int, str], None] | None = None,
    partial: Callable[[Trace], None] | None = None,
) -> Trace:
    """Any Chrome-trace-shaped file; ``progress(bytes_read, text)`` per chunk, and
    ``partial(trace so far)`` now and then while a large file loads (first after 1.5 s)."""
    path = Path(path)
    state = chrome.ChromeImport()
    views = _Partial(path, state, partial) if partial is not None else None

    def report(done: int) -> None:
        if progress is not None:
            progress(done, f"{len(state.builder):,} events")
        if views is not None:
            views(done)

    enabled = gc.isenabled()
    gc.disable()  # millions of small acyclic objects: the cyclic collector only costs time here
    try:
        trace = _load(path, state, progress, report)
    except BadTraceValue as exc:
        raise UserError(f"{path.name} is not a readable trace: {exc}.") from None
    finally:
        if enabled:
            gc.enable()
    if not len(trace.start):
        raise UserError(
            f'{path.name} holds no trace events (no complete "X" events): it is not a '
            "Chrome/Kineto/ONNX Runtime trace (trtexec --exportOutput? metadata?), or an empty "
            "capture."
        )
    return trace
