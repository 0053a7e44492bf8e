"""Read the event list of a Chrome-trace-shaped file in chunks of whole events, gzipped or not:
``{"traceEvents": [...], ...}`` (Kineto, Perfetto) or a bare ``[...]`` (ONNX Runtime).

Each chunk is the bytes of a JSON array (``[{...}, {...}]``) that a typed decoder turns into
events at C speed; memory stays bounded by the chunk, not the file (``json.load`` of a 500 MB
trace takes several GB, and a Python object per event is ~10× the file size). A chunk ends at
``}``-``,``-``{`` between two events; a split that falls inside a string or a nested list is
caught by the decoder (the piece is not valid JSON) and the chunk grows to the next candidate.
"""

from __future__ import annotations

import contextlib
import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from deploylens.core.errors import UserError

# Bytes decoded per step. A chunk's decoded events are worked into columns and dropped before
# the next: in 1 MB chunks they are still in the cache when the columns are built, and the
# allocator reuses the same few pages (2026-12-03, `trace --stats` 1M events, 12 rounds
# alternated: 1.44 s of CPU against 1.67 s in 8 MB chunks; the decode alone 0.82 against 0.88).
CHUNK = 1 << 20
# Nothing in a trace runs this long between two event boundaries: a longer string, number,
# nesting or run of whitespace is refused where it is seen (a 2 GiB name took 6 GB and minutes).
MAX_EVENT = 64 << 20
_MALFORMED_AT = re.compile(r"\(byte (\d+)\)")
_BETWEEN = re.compile(rb"\}\s*,\s*\{")
# a JSON string (escapes included; one the data cuts off runs to its end) or a bracket: the
# tokens that say how deep a byte lies. Possessive, so a string is read once, never backtracked
_DEPTH_TOKEN = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)|[][{}]', re.DOTALL)
_LAST = re.compile(rb"\}\s*\]")
_SPACE = re.compile(rb"\s*")


def open_binary(path: Path) -> IO[bytes]:
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        if magic == b"\x1f\x8b":
            return gzip.open(path, "rb")  # type: ignore[return-value]  # GzipFile is IO[bytes]
        return open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path} cannot be read: {exc.strerror or exc}.") from None


def iter_chunks(
    path: str | Path,
    decode: Callable[[bytes], list[Any]],
    progress: Callable[[int], None] | None = None,
    chunk: int = CHUNK,
    source: IO[bytes] | None = None,
) -> Iterator[list[Any]]:
    """Decoded lists of events, chunk by chunk; ``decode`` raises ``ValueError`` on bad JSON.
    ``progress(compressed_or_plain_bytes_read)`` is called per chunk. ``source``: read the
    rest of an event list from there instead (``path`` then only names it in messages).

    The unread rest lives in one ``bytearray`` consumed from the front (O(1) in CPython) and
    extended at the back, and a piece is copied once, into ``[piece]``: every extra copy of a
    300 MB file costs ~0.1 s in fresh pages."""
    path = Path(path)
    with contextlib.nullcontext(source) if source is not None else open_binary(path) as handle:
        raw = getattr(handle, "fileobj", None) or handle  # gzip: report compressed position
        # ``source``: the rest of the list, from an event's start (the parallel import's tail)
        buffer = bytearray(b"" if source is not None else _find_array(handle, path))
        count = 0
        consumed = _position(handle) - len(buffer)  # buffer[0]'s offset (inflated, gzipped)
        ended = False
        limit = chunk + MAX_EVENT + 1  # a buffer this long with no event end in it is refused
        while True:
            while not ended and len(buffer) < chunk:
                more = _read(handle, path, chunk)
                ended = not more
                buffer += more
            if progress is not None:
                progress(raw.tell())
            space = _SPACE.match(buffer).end()  # type: ignore[union-attr]
            del buffer[:space]
            consumed += space
            if buffer.startswith(b"]"):
                return
            try:
                cut = _decode_prefix(buffer, decode, chunk // 2, ended)
            except _Malformed as exc:
                where = f"byte {consumed + exc.at:,}" if consumed >= 0 else "a point"
                raise UserError(
                    f"{path.name} is not valid JSON at {where}, after {count:,} events: "
                    f"{exc.reason}."
                ) from None
            if cut is None:
                if ended:
                    raise UserError(
                        f"{path.name} ends inside the event list after {count:,} events "
                        "(the file is truncated)."
                    )
                if len(buffer) > limit - 1:
                    boundaries = list(_BETWEEN.finditer(buffer, 0, chunk))[-1:]
                    start = consumed + (boundaries[0].end() - 1 if boundaries else 0)
                    where = f"after byte {start:,}" if consumed >= 0 else f"after {count:,} events"
                    raise UserError(
                        f"{path.name}: something {where} runs past {MAX_EVENT >> 20} MB without "
                        "an event ending (a string, number, nesting or whitespace no trace "
                        "holds): refused there."
                    )
                # no event ends yet: the buffer doubles (up to the refusal), so an event of n
                # bytes is searched log(n / chunk) times, not n / chunk times over a growing
                # buffer (a 40 MB string was 2.2-2.7x dearer in 1 MB steps than in 8 MB ones)
                more = _read(handle, path, min(max(chunk, len(buffer)), limit - len(buffer)))
                ended = not more
                buffer += more
                continue
            events, used, last = cut
            count += len(events)
            del buffer[:used]
            consumed += used
            yield events
            if last:
                return


class _Malformed(ValueError):
    """JSON that is malformed before any split point: not a cut inside a string."""

    def __init__(self, at: int, reason: str) -> None:
        super().__init__(reason)
        self.at, self.reason = at, reason


def _position(handle: IO[bytes]) -> int:
    try:
        return int(handle.tell())
    except (OSError, ValueError, AttributeError):
        return -(1 << 62)  # unknown: offsets are not said


def _read(handle: IO[bytes], path: Path, size: int) -> bytes:
    try:
        return handle.read(size)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise UserError(f"{path.name} cannot be read to the end (corrupt): {exc}.") from None


def _bracketed(data: bytearray, end: int) -> bytes:
    """``[`` + the first ``end`` bytes + ``]``, in one copy."""
    with memoryview(data) as view:
        return b"".join((b"[", view[:end], b"]"))


def _decode_prefix(
    data: bytearray, decode: Callable[[bytes], list[Any]], start: int, ended: bool
) -> tuple[list[Any], int, bool] | None:
    """Decode the longest prefix of whole events that ends at a split point after ``start``
    (or the closing ``]`` when the list ends in ``data``): (events, bytes used, list ended)."""
    candidates: Iterator[re.Match[bytes]] = _BETWEEN.finditer(
        data, min(start, max(len(data) - 1, 0))
    )
    for tries in range(17):
        match = next(candidates, None)
        if match is None:
            break
        try:
            return decode(_bracketed(data, match.start() + 1)), match.end() - 1, False
        except ValueError as exc:  # a cut inside a string or a nested list, or bad JSON
            _real_error(exc, min(start, match.start()))
        if tries == 8:  # nine look-alikes in a row: only boundaries between whole events now
            candidates = _top_level_boundaries(data, match.start() + 1)
    if not ended and len(data) < (start * 8):
        return None  # read more, the list's end is not in sight
    for match in reversed(list(_LAST.finditer(data))[-8:]):
        try:
            return decode(_bracketed(data, match.start() + 1)), match.end(), True
        except ValueError as exc:
            _real_error(exc, min(start, match.start()))
            continue
    if data[_SPACE.match(data).end() :].startswith(b"]"):  # type: ignore[union-attr]
        return [], 0, True
    return None


def _top_level_boundaries(data: bytearray, after: int) -> Iterator[re.Match[bytes]]:
    """The boundaries between whole events whose ``}`` lies at or after ``after``. A name may
    hold ``},{`` many times over (a label that prints dicts), and ONNX Runtime lists a node's
    input shapes as objects (a 20-input Concat: 19 nested ``},{``); a chunk that tried only
    those read more until the file was refused. ``data`` starts at an event's first byte; a
    string the buffer cuts off runs to its end (more is read). A token at a time, so only where
    nine look-alikes in a row failed."""
    depth = 0
    for token in _DEPTH_TOKEN.finditer(data):
        byte = data[token.start()]
        if byte == 0x22:  # a string: whatever it holds
            continue
        if byte in (0x7B, 0x5B):  # { [
            depth += 1
            continue
        depth -= 1
        if depth < 0:  # the event list's own "]" (or bad JSON: the decoder says which)
            return
        if depth == 0 and token.start() >= after:
            boundary = _BETWEEN.match(data, token.start())
            if boundary is not None:
                yield boundary


def _real_error(exc: ValueError, before: int) -> None:
    """A parse error located before ``before`` (where every candidate cut lies after) is the
    file's own — bare NaN, a bad character — not a cut inside a string: ``_Malformed``."""
    found = _MALFORMED_AT.search(str(exc))
    if "trailing characters" in str(exc):  # the list ended before the cut: no error of its own
        return
    if found is not None and int(found.group(1)) - 1 < before:
        raise _Malformed(int(found.group(1)) - 1, str(exc).split(" (byte")[0])


def _find_array(handle: IO[bytes], path: Path) -> bytes:
    """The bytes just after the ``[`` that opens the event list."""
    buffer = _read(handle, path, 1 << 16)
    stripped = buffer.lstrip()
    if stripped.startswith(b"["):
        first = stripped[1:].lstrip()[:1]
        if first not in (b"{", b"]", b""):
            line = stripped.split(b"\n", 1)[0][:40].decode("utf-8", "replace")
            raise UserError(
                f"{path.name} is not a JSON trace: it starts with '{line}' (a text log?), not a "
                "list of events."
            )
        return stripped[1:]
    if not stripped.startswith(b"{"):
        raise UserError(f"{path.name} is not a JSON trace (it starts with {stripped[:20]!r}).")
    while True:
        at = buffer.find(b'"traceEvents"')
        if at >= 0:
            bracket = buffer.find(b"[", at)
            if bracket >= 0:
                return buffer[bracket + 1 :]
        more = _read(handle, path, CHUNK)
        if not more:
            raise UserError(f'{path.name} has no "traceEvents" list: not a Chrome/Kineto trace.')
        buffer = buffer[-64:] + more if at < 0 else buffer + more
