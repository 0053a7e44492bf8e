"""Open any supported trace by its content, not its name: Nsight Systems SQLite, trtexec
``--exportTimes``/``--exportProfile`` JSON, or any Chrome-trace-shaped JSON (gzipped or not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import input_file
from deploylens.core.trace.model import BadTraceValue, Trace


def load_trace(given: str | Path, progress: Any = None, partial: Any = None) -> Trace:
    """The trace, with what DeployLens's own capture did (``TRACE.capture.json``, written by
    ``deploylens profile``) in ``meta["capture"]`` when that file is beside it. ``partial``:
    called with the trace read so far while a large Chrome trace loads."""
    trace = _load(given, progress, partial)
    capture = _capture_sidecar(Path(given))
    if capture is not None:
        trace.meta["capture"] = capture
    return trace


def _capture_sidecar(path: Path) -> dict[str, Any] | None:
    from deploylens.core.trace.capture_sidecar import read_sidecar

    return read_sidecar(path)


def _load(given: str | Path, progress: Any = None, partial: Any = None) -> Trace:
    path = input_file(given, "trace")
    if path.stat().st_size == 0:
        raise UserError(f"{path.name} is empty (0 bytes), so it is not a trace.")
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"SQLite format 3"):
        from deploylens.core.trace.nsys import load_nsys

        return load_nsys(path, partial)
    if path.suffix == ".nsys-rep" or path.suffix == ".qdrep":
        raise UserError(
            f"{path.name} is an Nsight Systems report: export it first with "
            f"`nsys export --type sqlite {path.name}`."
        )
    from deploylens.core.trace import trtexec

    flavour = trtexec.sniff(head)
    try:
        if flavour == "times":
            return trtexec.load_times(path)
        if flavour == "profile":
            return trtexec.load_profile_trace(path)
    except BadTraceValue as exc:
        raise UserError(f"{path.name} is not a readable trtexec export: {exc}.") from None
    from deploylens.core.trace.chrome_file import load_chrome

    return load_chrome(path, progress, partial)
