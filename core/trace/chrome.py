"""Chrome-trace importers: PyTorch profiler / Kineto traces (new category names ``kernel``,
``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``, ``cuda_driver``, ``cpu_op``,
``user_annotation``, ``gpu_user_annotation``; older ``Kernel``, ``Memcpy``, ``Memset``,
``Runtime``, ``Operator``), ONNX Runtime profiles (``<node>_kernel_time`` events with the op and
provider in ``args``) and our own exports.

Chunks of events are decoded by msgspec into small typed structs (unknown keys skipped at C
speed), then turned into columns with list comprehensions: no per-event Python function call.
Times are parsed from the file's decimal text to integer nanoseconds exactly (a float64 of an
epoch-based ``ts`` in µs would round to ~0.25 µs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np

from deploylens.core.bulk import array_of
from deploylens.core.trace.model import (
    KIND,
    TIME_LIMIT_NS,
    BadTraceValue,
    Lane,
    Trace,
    TraceBuilder,
    numbering,
)

CATEGORY = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_runtime": "cuda_api",
    "runtime": "cuda_api",
    "cuda_driver": "cuda_api",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "python_function": "cpu_op",
    "user_annotation": "nvtx",
    "gpu_user_annotation": "nvtx",
    "node": "ort_node",
    "session": "cpu_op",
    # Other accelerators' Kineto categories (HTA counts their device ops as kernels): MTIA's
    # on-device ops, and every vendor's host runtime/driver calls.
    "mtia_ccp_events": "kernel",
    "mtia_runtime": "cuda_api",
    "xpu_runtime": "cuda_api",
    "xpu_driver": "cuda_api",
    "hpu_op": "cuda_api",
    "gcu_runtime": "cuda_api",
    "gcu_driver": "cuda_api",
    "glow_runtime": "cuda_api",
    "privateuse1_runtime": "cuda_api",
    "privateuse1_driver": "cuda_api",
}
GPU_CATEGORIES = {
    "kernel",
    "gpu_memcpy",
    "memcpy",
    "gpu_memset",
    "memset",
    "gpu_user_annotation",
    "mtia_ccp_events",
}
# Categories that carry no duration of their own: not worth a warning when unknown.
QUIET_CATEGORIES = {"", "trace", "overhead", "cpu_instant_event", "ac2g", "flow"}
_COPY = re.compile(r"(HtoD|DtoH|DtoD|PtoP|HtoH)", re.IGNORECASE)
_MEMKINDS = re.compile(r"\(([A-Za-z]+) -> ([A-Za-z]+)\)")
COPY_KIND = {"htod": "memcpy_h2d", "dtoh": "memcpy_d2h", "dtod": "memcpy_d2d", "ptop": "memcpy_p2p"}
_ZERO = msgspec.Raw(b"0")
ORT = KIND["ort_node"]
OTHER = KIND["other"]


class _Args(msgspec.Struct, gc=False, frozen=True):
    """What a row takes from ``args``; absent numbers decode to their column's "none" value (a
    JSON ``null`` stays ``None``: ``_int64s`` maps it), so the columns need no per-event test."""

    device: int | None = None
    stream: int | None = None
    correlation: int | None = -1
    bytes: int | float | None = 0
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    op_name: str | None = None
    provider: str | None = None
    name: str | None = None  # process_name / thread_name metadata
    detail: str | None = None  # our own exports


_NO_ARGS = _Args()


class _Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event (``"ph": "X"``): the only kind that becomes a row."""

    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: msgspec.Raw = _ZERO  # exact text: an epoch-based µs time needs 19 digits
    dur: float = 0.0  # a duration in µs fits a float64 to well below a nanosecond
    args: _Args = _NO_ARGS  # shared by every event without args (frozen: never written to)


class _Metadata(msgspec.Struct, gc=False, tag_field="ph", tag="M"):
    """``process_name`` / ``thread_name``: lane titles."""

    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    args: _Args | None = None


# Every other phase of the Chrome trace format decodes to an empty struct: its fields are skipped
# at C speed instead of becoming strings (Kineto writes a flow pair per kernel — half the events).
OTHER_PHASES = "BEiIbneSTpFstfPONDCRcVv()"
_SKIPPED = tuple(
    msgspec.defstruct(f"_Phase{ord(p)}", [], tag_field="ph", tag=p, gc=False) for p in OTHER_PHASES
)


class _LooseArgs(msgspec.Struct):
    device: Any = None
    stream: Any = None
    correlation: Any = None
    bytes: Any = None
    grid: Any = None
    block: Any = None
    op_name: Any = None
    provider: Any = None
    name: Any = None
    detail: Any = None


class _LooseEvent(msgspec.Struct):
    """For files whose fields have unusual types (a numeric name, a dict in ``grid``)."""

    ph: Any = ""
    cat: Any = ""
    name: Any = ""
    pid: Any = 0
    tid: Any = 0
    ts: msgspec.Raw = _ZERO
    dur: msgspec.Raw = _ZERO
    args: _LooseArgs | None = None


_STRICT = msgspec.json.Decoder(list[Union[_Complete, _Metadata, *_SKIPPED]])  # type: ignore[valid-type]  # a Union built from a tuple; mypy cannot follow it
_LOOSE = msgspec.json.Decoder(list[_LooseEvent])


def decode_events(data: bytes) -> list[Any]:
    """Typed events; ``ValueError`` for bytes that are not JSON (the chunker tries another
    split), ``BadTraceValue`` for JSON whose values no trace holds."""
    try:
        return _STRICT.decode(data)
    except msgspec.ValidationError:
        pass
    except RecursionError:
        raise BadTraceValue("its JSON is nested too deeply to be a trace") from None
    try:
        loose = _LOOSE.decode(data)
    except RecursionError:
        raise BadTraceValue("its JSON is nested too deeply to be a trace") from None
    except msgspec.ValidationError as exc:  # whole JSON values of a shape no event has
        raise BadTraceValue(f"an event does not fit the trace format: {exc}") from None
    try:
        return [_normalized(e) for e in loose if e.ph in ("X", "M")]
    except (ValueError, TypeError, OverflowError) as exc:
        raise BadTraceValue(f"an event holds a value that is not a time: {exc}") from None


def _normalized(e: _LooseEvent) -> _Complete | _Metadata:
    a = e.args
    args = (
        _Args(
            _int_or_none(a.device),
            _int_or_none(a.stream),
            _int_or_none(a.correlation),
            _int(a.bytes, 0),
            _ints(a.grid),
            _ints(a.block),
            None if a.op_name is None else str(a.op_name),
            None if a.provider is None else str(a.provider),
            None if a.name is None else str(a.name),
            None if a.detail is None else str(a.detail),
        )
        if a is not None
        else None
    )
    if e.ph == "M":
        return _Metadata(str(e.name), _scalar(e.pid), _scalar(e.tid), args)
    dur = _ns_text(bytes(e.dur).decode()) / 1e3
    return _Complete(
        str(e.cat), str(e.name), _scalar(e.pid), _scalar(e.tid), e.ts, dur, args or _NO_ARGS
    )


def _scalar(value: Any) -> int | str:
    """A pid/tid as the strict struct holds it (absent: 0)."""
    if value is None:
        return 0
    return value if isinstance(value, int | str) else str(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else _int(value)


def _ints(value: Any) -> tuple[int, ...] | None:
    return tuple(_int(v, 0) for v in value) if isinstance(value, list) else None


def _int(value: Any, default: int = -1) -> int:
    """A lane/process id as an int64 for labels: digits of a name ("stream 7"), bounded (a
    5,000-digit pid passed Python's digit limit and raised)."""
    try:
        result = int(value)
    except (TypeError, ValueError, OverflowError):
        digits = re.findall(r"\d+", str(value)[:200])
        return int(digits[-1][:18]) if digits else default
    return result if -(2**63) <= result < 2**63 else default


def ns_from_us(tokens: Sequence[Any]) -> np.ndarray:
    """Decimal microseconds as JSON number text (bytes, or msgspec ``Raw``) → int64 nanoseconds,
    vectorized and exact (digits past the nanosecond are dropped). Signs and exponents take the
    slow exact path. The tokens are joined once, with commas, and read as one byte array: no
    bytes object and no ``len`` call per token (each cost as much as the parse)."""
    if not tokens:
        return np.zeros(0, np.int64)
    flat = np.frombuffer(b",".join(tokens) + b",", np.uint8)
    ends = np.flatnonzero(flat == 44)  # a number holds no comma; anything else is measured
    if ends.size != len(tokens):
        ends = np.cumsum(np.fromiter(map(len, tokens), np.int64, len(tokens)) + 1) - 1
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    lengths = ends - starts
    low, high = int(lengths.min()), int(lengths.max())
    groups = [low] if low == high else np.unique(lengths).tolist()
    result = np.empty(lengths.size, np.int64)
    for length in groups:
        rows = np.flatnonzero(lengths == length) if len(groups) > 1 else None

        def text(i: int, rows: np.ndarray | None = rows, length: int = length) -> bytes:
            at = int(starts[i if rows is None else rows[i]])
            return bytes(flat[at : at + length])

        count = lengths.size if rows is None else rows.size
        if length >= 24:  # past int64's digits at ns: the exact text path
            found = np.array([_ns_text(text(i).decode()) for i in range(count)], np.int64)
        else:
            m = (
                flat.reshape(count, length + 1)[:, :length]  # each row: a token and its comma
                if rows is None
                else flat[starts[rows][:, None] + np.arange(length)]
            )
            fixed = _fixed_layout(m, length)
            found = fixed if fixed is not None else _any_layout(m, text)
        if rows is None:
            return found
        result[rows] = found
    return result


def _fixed_layout(m: np.ndarray, length: int) -> np.ndarray | None:
    """Tokens of one length, all digits around one dot at the same place (an epoch-based
    ``ts`` column, a trace's fixed 3 decimals): two vector steps per digit column. ``None``
    when the block has any other shape."""
    if length >= 24:
        return None
    dots = np.flatnonzero(m[0, :length] == 46)
    dot = int(dots[0]) if dots.size == 1 else length
    if dots.size > 1 or (dot < length and not (m[:, dot] == 46).all()):
        return None
    digits = m[:, :length] - np.uint8(48)  # non-digits wrap to ≥ 10
    if dot < length:
        digits[:, dot] = 0
    if not (digits < 10).all():
        return None
    fraction = max(length - dot - 1, 0)
    value = np.zeros(m.shape[0], np.int64)
    for column in range(min(length, dot + 4)):
        if column != dot:
            value *= 10
            value += digits[:, column]
    result: np.ndarray | None = value * _SCALE[min(fraction, 3)]
    return result


def _any_layout(m: np.ndarray, text: Callable[[int], bytes]) -> np.ndarray:
    """Tokens of one length and any shape, column by column: digits accumulate (at most 3 past
    the dot: ns), the result is then scaled by the fraction digits seen. O(width) vector steps,
    no n×width int64 temporaries; signs and exponents take the exact text path
    (``text(row)``)."""
    n, width = m.shape
    value = np.zeros(n, np.int64)
    fraction = np.zeros(n, np.int64)
    seen_dot = np.zeros(n, bool)
    odd = np.zeros(n, bool)
    for c in range(width):
        column = m[:, c]
        digit = (column >= 48) & (column <= 57)
        is_dot = column == 46
        take = digit & (~seen_dot | (fraction < 3))
        value = np.where(take, value * 10 + (column.astype(np.int64) - 48), value)
        fraction += take & seen_dot
        odd |= (~digit & ~is_dot) | (is_dot & seen_dot)
        seen_dot |= is_dot
    result = value * _SCALE[fraction]
    for i in np.flatnonzero(odd):
        result[i] = _ns_text(text(int(i)).decode())
    return result


_SCALE = np.array([1000, 100, 10, 1], np.int64)


def ns_from_float_us(us: np.ndarray) -> np.ndarray:
    """Durations in µs → ns, rounded to the nearest ns; negatives (clock skew) become 0;
    ``BadTraceValue`` for NaN or one longer than a trace can hold (it was clipped silently)."""
    if us.size and not (us.max() * 1e3 <= TIME_LIMIT_NS):  # NaN fails the comparison too
        worst = float(np.nanmax(us)) if not np.isnan(us).all() else float("nan")
        raise BadTraceValue(f"an event lasts {worst:.3g} µs: the file is corrupt")
    result: np.ndarray = np.rint(np.clip(us, 0.0, None) * 1e3).astype(np.int64)
    return result


def _ns_text(value: str) -> int:
    """One µs number's text → ns, exactly; a quoted number ("12.5", written by some tools)
    counts as the number. ``BadTraceValue`` for text or a time past int64."""
    value = value.strip().strip('"')
    whole, _, fraction = value.partition(".")
    try:
        if "e" in value.lower() or not whole.lstrip("-").isdigit():
            result = round(float(value) * 1000)
        else:
            sign = -1 if whole.startswith("-") else 1
            result = int(whole) * 1000 + sign * int((fraction + "000")[:3] or 0)
    except (ValueError, OverflowError):
        raise BadTraceValue(f"a time is {value[:40]!r}, not a number of microseconds") from None
    if abs(result) > TIME_LIMIT_NS:
        raise BadTraceValue(f"a time of {value[:40]} µs is outside the ±73 years a trace can hold")
    return result


@dataclass
class Chunk:
    """One chunk's events as columns, with chunk-local ids for names, lanes and details (built
    where the chunk was decoded: here, or in a worker process of the parallel import); merged
    in file order, the global ids come out as a sequential import assigns them."""

    columns: dict[str, np.ndarray]  # start, dur, kind, corr, nbytes; local lane/name/detail ids
    names: list[str]
    lane_keys: list[tuple[Any, ...]]
    details: list[Any]  # local id → detail key; 0 is None
    process_names: dict[Any, str] = field(default_factory=dict)
    thread_names: dict[tuple[Any, Any], str] = field(default_factory=dict)
    categories: set[str] = field(default_factory=set)
    unknown: dict[str, int] = field(default_factory=dict)


def chunk_columns(events: list[Any]) -> Chunk:
    """Typed events → a ``Chunk``. Lane, kind, name and detail are worked out once per distinct
    ``_keyed`` key (a few hundred per chunk) and spread to the rows by NumPy: a comprehension,
    a tuple and a lookup per event for each of them cost ~30 % more."""
    chunk = Chunk({}, [], [], [None])
    kinds = set(map(type, events))  # at C speed: most chunks hold no metadata event
    for e in [e for e in events if type(e) is _Metadata] if _Metadata in kinds else ():
        if e.args is not None and e.args.name is not None:
            if e.name == "process_name":
                chunk.process_names[e.pid] = e.args.name
            elif e.name == "thread_name":
                chunk.thread_names[(e.pid, e.tid)] = e.args.name
    xs = events if kinds == {_Complete} else [e for e in events if type(e) is _Complete]
    if not xs:
        return chunk
    keys, ids = _keyed(xs)
    classes = {category: _classify(category) for category in {key[0] for key in keys}}
    chunk.categories = set(classes)
    if any(c[0] == ORT for c in classes.values()):
        xs = _ort_nodes(xs, classes)
        if not xs:
            return chunk
        keys, ids = _keyed(xs)
    names, lanes, details = numbering(), numbering(), numbering({None: 0})
    kind, lane, name, detail = [], [], [], []
    for cat, text, pid, tid, device, stream, grid, block, op, provider, extra in keys:
        what, where = classes[cat]
        kind.append(what)
        lane.append(lanes[(where, device, stream, pid, tid)])
        name.append(names[text])
        nothing = grid is None and op is None and extra is None
        detail.append(0 if nothing else details[(grid, block, op, provider, extra)])
    strange = {c for c in classes if classes[c][0] == OTHER} - QUIET_CATEGORIES
    if strange:
        per_key = np.bincount(ids, minlength=len(keys))
        for (category, *_), count in zip(keys, per_key.tolist(), strict=True):
            if category in strange:
                chunk.unknown[category] = chunk.unknown.get(category, 0) + count
    chunk.columns = {
        "start": ns_from_us([e.ts for e in xs]),
        "dur": ns_from_float_us(array_of([e.dur for e in xs], np.float64)),
        "lane": np.array(lane, np.int32)[ids],
        "kind": np.array(kind, np.int8)[ids],
        "name": np.array(name, np.int32)[ids],
        "corr": _int64s([e.args.correlation for e in xs], "correlation", -1),
        "nbytes": _int64s([e.args.bytes for e in xs], "bytes", 0),
        "detail": np.array(detail, np.int32)[ids],
    }
    chunk.names, chunk.lane_keys, chunk.details = list(names), list(lanes), list(details)
    return chunk


def _keyed(xs: list[_Complete]) -> tuple[dict[tuple[Any, ...], int], np.ndarray]:
    """Each event's key: everything its lane, kind, name and detail depend on, as local ids
    (first seen, first numbered: the order a sequential import assigns ids in)."""
    keys = numbering()
    ids = array_of(
        [
            keys[
                (
                    e.cat,
                    e.name,
                    e.pid,
                    e.tid,
                    a.device,
                    a.stream,
                    a.grid,
                    a.block,
                    a.op_name,
                    a.provider,
                    a.detail,
                )
            ]
            for e in xs
            for a in (e.args,)  # a comprehension's own local: faster than a walrus or e.args.x
        ],
        np.int32,
    )
    return keys, ids


def _ort_nodes(xs: list[_Complete], classes: dict[str, tuple[int, str]]) -> list[_Complete]:
    """ORT's ``<node>_kernel_time`` events carry the node name; fences are its own
    bookkeeping and are dropped."""
    kept = []
    for e in xs:
        if classes[e.cat][0] == ORT:
            if not e.name.endswith("_kernel_time"):
                continue
            e = msgspec.structs.replace(e, name=e.name[: -len("_kernel_time")])
        kept.append(e)
    return kept


class ChromeImport:
    """Columns of one file, chunk by chunk; lanes and names are resolved at the end, once every
    process/thread name (metadata events may come last) is known."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.lane_keys = numbering()  # (class, a, b) → lane id
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.categories: set[str] = set()
        self.details = numbering({None: 0})  # (grid, block, op, provider, text) → id; 0: none
        self.unknown: dict[str, int] = {}  # categories this version does not know → events

    def restart(self) -> None:
        """Forget what was read (the parallel pass gave up: the file is read again)."""
        self.__init__()  # type: ignore[misc]

    def add(self, events: list[Any]) -> None:
        self.merge(chunk_columns(events))

    def merge(self, chunk: Chunk) -> None:
        """A chunk's local ids mapped to this file's (one lookup per distinct key)."""
        self.process_names.update(chunk.process_names)
        self.thread_names.update(chunk.thread_names)
        self.categories |= chunk.categories
        for category, count in chunk.unknown.items():
            self.unknown[category] = self.unknown.get(category, 0) + count
        if not chunk.columns:
            return
        names, lanes, details = self.builder.names, self.lane_keys, self.details
        local = chunk.columns
        self.builder.add_columns(
            start=local["start"],
            dur=local["dur"],
            lane=np.array([lanes[k] for k in chunk.lane_keys], np.int32)[local["lane"]],
            kind=local["kind"],
            name=np.array([names[n] for n in chunk.names], np.int32)[local["name"]],
            corr=local["corr"],
            nbytes=local["nbytes"],
            detail=np.array([details[k] for k in chunk.details], np.int32)[local["detail"]],
        )

    @property
    def format(self) -> str:
        classes = [_classify(c) for c in self.categories]
        if any(c[1].startswith("gpu") for c in classes):
            return "kineto"
        return "onnxruntime" if any(c[0] == ORT for c in classes) else "chrome"

    def snapshot(self, path: Path) -> Trace:
        """The trace of the events read so far; the import goes on untouched."""
        return self.finish(path, self.builder.copy())

    def finish(self, path: Path, builder: TraceBuilder | None = None) -> Trace:
        builder = self.builder if builder is None else builder
        lanes: list[Lane] = []
        lane_map: dict[Lane, int] = {}
        for key in self.lane_keys:
            lane = self._lane(key)
            lane_map.setdefault(lane, len(lane_map))
            lanes.append(lane)
        remap = np.array([lane_map[lane] for lane in lanes] or [0], np.int32)
        detail_text = np.zeros(len(self.details) + 1, np.int32)
        for key, index in self.details.items():
            if key is None:
                continue
            grid, block, op, provider, text = key
            if text is None:
                text = (
                    f"grid {grid} block {block or ()}"
                    if op is None
                    else f"{op} on {provider or '?'}"
                )
            detail_text[index] = builder.intern(text)
        builder.meta.update(source=str(path), format=self.format)
        if self.unknown:
            builder.meta["unknown_categories"] = dict(sorted(self.unknown.items()))
        trace = builder.finish(lanes=list(lane_map), remap={"lane": remap, "detail": detail_text})
        self._copies(trace)
        return trace

    def _copies(self, trace: Trace) -> None:
        """Copy direction and memory kinds come from the name ("Memcpy HtoD (Pinned -> Device)")."""
        copies = np.flatnonzero(trace.kind == KIND["memcpy"])
        for name_id in np.unique(trace.name[copies]):
            name = trace.names[int(name_id)]
            on = copies[trace.name[copies] == name_id]
            found = _COPY.search(name)
            trace.kind[on] = KIND[
                COPY_KIND.get(found.group(1).lower(), "memcpy") if found else "memcpy"
            ]
            kinds = _MEMKINDS.search(name)
            if kinds:
                text = f"{kinds.group(1)} → {kinds.group(2)}"
                if text not in trace.names:
                    trace.names.append(text)
                trace.detail[on] = trace.names.index(text)

    def _lane(self, key: tuple[Any, ...]) -> Lane:
        where, device, stream, pid, tid = key
        if where.startswith("gpu"):
            device = _int(pid if device is None else device, 0)
            stream = _int(tid if stream is None else stream, 0)
            name = f"annotations stream {stream}" if where == "gpu_nvtx" else f"stream {stream}"
            return Lane(f"GPU {device}", name, device, stream)
        thread = self.thread_names.get((pid, tid)) or f"thread {_int(tid, 0)}"
        process = self.process_names.get(pid) or f"process {_int(pid, 0)}"
        return Lane(process, f"annotations {thread}" if where == "host_nvtx" else thread)


def _int64s(values: list[Any], field: str, missing: int) -> np.ndarray:
    """A column of integers; a JSON ``null`` counts as ``missing`` (absent)."""
    try:
        return array_of(values, np.int64)
    except TypeError:
        values = [missing if v is None else v for v in values]
    except (OverflowError, ValueError):
        pass
    try:
        return array_of(values, np.int64)
    except (OverflowError, ValueError, TypeError):
        bad = next((v for v in values if not -(2**63) <= int(v) < 2**63), values[0])
        raise BadTraceValue(
            f"an event's '{field}' is {bad}, past what a 64-bit integer holds"
        ) from None


def _classify(category: str) -> tuple[int, str]:
    kind = CATEGORY.get(category.lower(), "other")
    where = "gpu" if category.lower() in GPU_CATEGORIES else "host"
    return KIND[kind], f"{where}_nvtx" if kind == "nvtx" else where
