"""Stream the events of a Chrome-trace-shaped file one object at a time, gzipped or not: either
``{"traceEvents": [...], ...}`` (Kineto, Perfetto) or a bare ``[...]`` (ONNX Runtime). Memory
stays bounded by the chunk size plus one event, not by the file (``json.load`` of a 500 MB trace
takes several GB)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from deploylens.core.errors import UserError

CHUNK = 1 << 20
_WHITESPACE = " \t\r\n,"


def open_text(path: Path) -> IO[str]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def iter_events(path: str | Path, counter: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """Yield each event object; ``counter[0]`` tracks characters read (for progress)."""
    path = Path(path)
    decoder = json.JSONDecoder(parse_float=str)  # exact: "ts": 1712867402349219.960 is ns-exact
    try:
        handle = open_text(path)
    except OSError as exc:
        raise UserError(f"{path} cannot be read: {exc.strerror or exc}.") from None
    with handle:
        buffer, position = _find_array(handle, path)
        number = 0
        while True:
            while position < len(buffer) and buffer[position] in _WHITESPACE:
                position += 1
            if position >= len(buffer) or len(buffer) - position < 2:
                more = handle.read(CHUNK)
                if not more and position >= len(buffer):
                    raise UserError(
                        f"{path.name} ends inside the event list (truncated?) "
                        f"after {number:,} events."
                    )
                buffer, position = buffer[position:] + more, 0
                if counter is not None:
                    counter[0] += len(more)
                continue
            if buffer[position] == "]":
                return
            try:
                event, end = decoder.raw_decode(buffer, position)
            except json.JSONDecodeError as exc:
                more = handle.read(CHUNK)
                if not more:
                    raise UserError(
                        f"{path.name}: malformed event #{number + 1}: {exc.msg} "
                        f"(truncated or not a trace?)."
                    ) from None
                buffer, position = buffer[position:] + more, 0
                if counter is not None:
                    counter[0] += len(more)
                continue
            position = end
            number += 1
            if isinstance(event, dict):
                yield event


def _find_array(handle: IO[str], path: Path) -> tuple[str, int]:
    """Position just after the ``[`` that opens the event list."""
    buffer = handle.read(CHUNK)
    stripped = buffer.lstrip()
    if stripped.startswith("["):
        return buffer, buffer.index("[") + 1
    if not stripped.startswith("{"):
        raise UserError(f"{path.name} is not a JSON trace (it starts with {stripped[:20]!r}).")
    while True:
        at = buffer.find('"traceEvents"')
        if at >= 0:
            bracket = buffer.find("[", at)
            if bracket >= 0:
                return buffer, bracket + 1
        more = handle.read(CHUNK)
        if not more:
            raise UserError(f'{path.name} has no "traceEvents" list: not a Chrome/Kineto trace.')
        buffer = buffer[-64:] + more if at < 0 else buffer + more
