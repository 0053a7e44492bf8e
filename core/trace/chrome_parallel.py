"""The Chrome-trace import on every core: a large file is cut into pieces of whole events, each
piece decoded and turned into columns in a worker process (``chrome.chunk_columns``), and the
pieces merged here in file order — so the trace is the one a sequential import makes, ids
included. The decode is most of an import's time and runs at C speed in msgspec, so one process
cannot go faster than it; two cores halve it.

The workers are ``import_workers.Workers``. A plain file's pieces are byte ranges the workers
read themselves (this process only finds the cuts: a regex search near every ``PIECE`` bytes of
a memory map); a gzipped file is inflated here and each inflated block goes down the pipe as it
came out of zlib (a view up to its last cut, plus the few bytes carried from the block before):
copying a gigabyte of blocks into one buffer and out again cost this process more than the
inflate itself. A cut between ``}`` and ``{`` can fall inside a string (a name holding
``},{``): that piece is not JSON, its worker says so, and the file is read again sequentially —
the answer never depends on where the cuts fell. The tail (the last ``TAIL`` bytes or so, with
whatever follows the event list) is read by the sequential reader, which knows how lists end.
"""

from __future__ import annotations

import io
import mmap
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trace import chrome
from deploylens.core.trace.import_workers import BadPiece, Workers, workers
from deploylens.core.trace.json_stream import (
    _BETWEEN,
    _find_array,
    iter_chunks,
    open_binary,
)
from deploylens.core.trace.json_stream import (
    MAX_EVENT as MAX_EVENT,  # re-exported: the fuzz runner lowers both bounds at once
)
from deploylens.core.trace.model import BadTraceValue

# A piece is decoded whole: 32 MB pieces took fresh pages for each piece's ~100k events (a 1M
# import on 2 workers: 2.16-2.31 s of CPU against 1.65-1.86 in 8 MB pieces, wall 1.27-1.34 s
# against 0.98-1.11; gzipped 2.9-3.5 against 2.5-3.0), the same effect as the sequential chunk.
# Pieces stayed 8 MB when the sequential chunk went to 1 MB (2026-12-03): each piece costs a
# message each way and a merge, and the parallel import was not measured again (it runs only
# where 3 or more cores are free, which these 2-core machines never have).
PIECE = 8 << 20
# What the sequential reader keeps of a file's end: whatever follows the event list (Kineto's
# trailing keys, a few kB) must fall in it. It was 1–2 pieces: 10–20 % of a 1M-event file read
# in one process after the workers were done.
TAIL = 4 << 20
PARALLEL_FROM = 192 << 20  # smaller files: a worker's start (~0.4 s) costs more than it saves
BadCut = BadPiece  # a piece that is not a JSON list of events: a cut fell inside a string


def worth_it(path: Path) -> bool:
    try:
        return workers() > 1 and inflated_size(path) >= PARALLEL_FROM
    except OSError:
        return False


def inflated_size(path: Path) -> int:
    """Bytes the reader will decode: a gzip file's inflated size (its trailer holds it modulo
    2**32; the smallest size at least the compressed one), else the file's."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if handle.read(2) != b"\x1f\x8b" or size < 18:
            return size
        handle.seek(-4, 2)
        modulo = int.from_bytes(handle.read(4), "little")
    return modulo + max(0, -(-(size - modulo) // 2**32)) * 2**32


def _columns_of(*parts: bytes) -> chrome.Chunk:
    """In a worker: one piece of whole events (given in parts) → its columns."""
    try:
        events = chrome.decode_events(b"".join((b"[", *parts, b"]")))
    except BadTraceValue:
        raise
    except ValueError:
        raise BadCut from None
    return chrome.chunk_columns(events)


def _columns_of_range(path: str, start: int, end: int) -> chrome.Chunk:
    """In a worker: read ``[start, end)`` of a plain file and make its columns."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    return _columns_of(data)


def _plain_pieces(path: Path, piece: int, tail: int) -> tuple[list[tuple[int, int]], int]:
    """Byte ranges of whole events, and where the tail (its last ``tail`` bytes or so) starts."""
    with open_binary(path) as handle:
        rest = _find_array(handle, path)
        offset = handle.tell() - len(rest)
    with open(path, "rb") as raw, mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as view:
        size, at, ranges = len(view), offset, []
        while size - at > 2 * tail:
            wanted = min(at + piece, size - tail)
            found = _BETWEEN.search(view, wanted, wanted + MAX_EVENT)  # a bounded look ahead
            if found is None and wanted + MAX_EVENT < size - tail:  # refused where it starts
                last = _last_cut(view[at:wanted])
                raise _too_long(path, at + (last[1] if last else 0))
            if found is None:
                break
            ranges.append((at, found.start() + 1))
            at = found.end() - 1
    return ranges, at


def _too_long(path: Path, where: int) -> UserError:
    return UserError(
        f"{path.name}: something after byte {where:,} runs past {MAX_EVENT >> 20} MB without an "
        "event ending (a string, number, nesting or whitespace no trace holds): refused there."
    )


def _gzip_pieces(
    path: Path, piece: int, tail: int
) -> Iterator[tuple[tuple[Any, ...] | None, int, bytes]]:
    """(the parts of one piece, compressed bytes read, ``b""``) per piece, then (None, read,
    tail). A block is cut only once the next one has come (the last block, where the event
    list ends, goes to the sequential reader with the tail)."""
    with open_binary(path) as handle:
        raw = getattr(handle, "fileobj", None) or handle
        carry = _find_array(handle, path)
        block = handle.read(piece)
        inflated = handle.tell() - len(block)  # where ``block`` starts in the inflated stream
        while True:
            after = handle.read(piece)
            if not after:  # the last block: all but its last ``tail`` bytes or so to a worker
                found = _BETWEEN.search(block, len(block) - tail) if len(block) > 2 * tail else None
                if found is not None:
                    yield (carry, block[: found.start() + 1]), raw.tell(), b""
                    carry, block = b"", block[found.end() - 1 :]
                yield None, raw.tell(), carry + block
                return
            cut = _last_cut(block)
            if cut is None:  # no cut in a whole block (one huge event): carry it on, a while
                if len(carry) + len(block) > MAX_EVENT:
                    raise _too_long(path, inflated - len(carry))
                inflated += len(block)
                carry, block = carry + block, after
                continue
            view = memoryview(block)[: cut[0]]
            yield (carry, pickle.PickleBuffer(view)), raw.tell(), b""
            inflated += len(block)
            carry, block = block[cut[1] :], after


def _last_cut(block: bytes) -> tuple[int, int] | None:
    """(end of the last whole event, start of the next) in ``block``; ``None`` without a cut."""
    window = 1 << 16
    while True:
        start = max(len(block) - window, 0)
        matches = list(_BETWEEN.finditer(block, start))  # a few hundred events' worth
        if matches:
            return matches[-1].start() + 1, matches[-1].end() - 1
        if start == 0:
            return None
        window *= 16


def load_parallel(path: Path, state: Any, report: Callable[[int], None] | None, count: int) -> bool:
    """Merge every piece but the tail into ``state`` (a ``chrome.ChromeImport``), then the tail;
    ``False`` when a cut fell inside a string (``state`` is then spoilt: start again)."""
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    pool = Workers(count)
    finished = False

    def drain(limit: int) -> None:
        while len(pool.order) > limit:
            chunk, done = pool.receive()
            state.merge(chunk)
            if report is not None:
                report(done)

    try:
        tail = b""
        if gzipped:
            for parts, done, rest in _gzip_pieces(path, PIECE, TAIL):
                if parts is None:
                    tail = rest
                    break
                pool.send(("chrome-bytes", *parts), done)
                drain(2 * count)
        else:
            ranges, at = _plain_pieces(path, PIECE, TAIL)
            for start, end in ranges:
                pool.send(("chrome-range", str(path), start, end), end)
                drain(2 * count)
            with open(path, "rb") as handle:
                handle.seek(at)
                tail = handle.read()
        drain(0)
        finished = True
    except BadCut:
        return False
    finally:
        pool.close(finished)
    for events in iter_chunks(path, chrome.decode_events, source=io.BytesIO(tail)):
        state.add(events)
    return True
