"""Opening a Chrome-trace-shaped file: on every core when it is large (chrome_parallel), chunk by
chunk in this process otherwise — the same trace either way (chrome's columns, merged in file
order)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deploylens.core.bulk import no_cyclic_collection
from deploylens.core.errors import UserError
from deploylens.core.trace import chrome, chrome_parallel, import_workers
from deploylens.core.trace.json_stream import CHUNK, iter_chunks
from deploylens.core.trace.model import BadTraceValue, Trace
from deploylens.core.trace.partial import PartialViews


def _load(
    path: Path,
    state: chrome.ChromeImport,
    progress: Callable[[int, str], None] | None,
    report: Callable[[int], None] | None,
) -> Trace:
    """On every core for a large file (chrome_parallel), else chunk by chunk here."""
    if chrome_parallel.worth_it(path):
        try:
            whole = chrome_parallel.load_parallel(path, state, report, import_workers.workers())
        except import_workers.WorkerLost:
            whole = False  # a worker could not start or died: this process reads it all
        if whole:
            return state.finish(path)
        state.restart()  # or a cut fell inside a string: the sequential reader decides
        if progress is not None:
            progress(0, "reading again in one process")
    for events in iter_chunks(path, chrome.decode_events, report, SEQUENTIAL_CHUNK):
        state.add(events)
    return state.finish(path)


SEQUENTIAL_CHUNK = CHUNK  # bytes decoded per step in this process


def load_chrome(
    path: str | Path,
    progress: Callable[[int, str], None] | None = None,
    partial: Callable[[Trace], None] | None = None,
) -> Trace:
    """Any Chrome-trace-shaped file; ``progress(bytes_read, text)`` per chunk, and
    ``partial(trace so far)`` now and then while a large file loads (core/trace/partial.py:
    the first once FIRST_VIEW_EVENTS are decoded)."""
    path = Path(path)
    state = chrome.ChromeImport()
    views = PartialViews(partial, lambda: state.snapshot(path)) if partial is not None else None
    size = max(path.stat().st_size, 1)

    def report(done: int) -> None:
        if progress is not None:
            progress(done, f"{len(state.builder):,} events")
        if views is not None:
            views(len(state.builder), done / size)

    try:
        with no_cyclic_collection():  # millions of small acyclic objects
            trace = _load(path, state, progress, report)
    except BadTraceValue as exc:
        raise UserError(f"{path.name} is not a readable trace: {exc}.") from None
    if not len(trace.start):
        raise UserError(
            f'{path.name} holds no trace events (no complete "X" events): it is not a '
            "Chrome/Kineto/ONNX Runtime trace (trtexec --exportOutput? metadata?), or an empty "
            "capture."
        )
    return trace
