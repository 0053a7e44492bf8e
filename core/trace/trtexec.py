"""trtexec's timing exports as traces, so they open in the timeline next to Kineto and nsys:

- ``--exportTimes``: one record per inference with host enqueue and GPU H2D / compute / D2H
  start-end times (ms from trtexec's start) → three GPU lanes and one host lane, real times.
- ``--exportProfile``: per-layer average times with no timestamps → one inference laid out
  layer after layer in engine order (``meta["synthetic_times"]`` says so, and the view shows it),
  which is what the per-layer table, the graph overlay and the kernel → layer → node link need.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from deploylens.core.engine.timings import load_profile
from deploylens.core.engine.timings import number as as_number
from deploylens.core.errors import UserError
from deploylens.core.files import read_json
from deploylens.core.trace.model import (
    KIND,
    TIME_LIMIT_NS,
    BadTraceValue,
    Lane,
    Trace,
    TraceBuilder,
)

STAGES = (
    ("startH2dMs", "endH2dMs", "memcpy_h2d", "Memcpy HtoD (inference input)", "H2D"),
    ("startComputeMs", "endComputeMs", "kernel", "TensorRT inference (compute)", "compute"),
    ("startD2hMs", "endD2hMs", "memcpy_d2h", "Memcpy DtoH (inference output)", "D2H"),
)


def sniff(head: bytes) -> str | None:
    """``"times"`` / ``"profile"`` when the start of a JSON file looks like a trtexec export."""
    text = head.lstrip()
    if not text.startswith(b"["):
        return None
    if b'"startEnqMs"' in text or b'"startComputeMs"' in text:
        return "times"
    if b'"averageMs"' in text or (b'"count"' in text[:200] and b'"timeMs"' in text):
        return "profile"
    return None


def _ns(ms: np.ndarray) -> np.ndarray:
    """ms → ns; ``BadTraceValue`` past the times a trace holds (it wrapped around before)."""
    finite = ms[np.isfinite(ms)]
    if finite.size and np.abs(finite).max() > TIME_LIMIT_NS / 1e6:  # no overflow on the way
        raise BadTraceValue(
            f"a time of {np.abs(finite).max():.3g} ms is outside what a trace holds"
        )
    return np.round(ms * 1e6).astype(np.int64)


def load_times(path: str | Path) -> Trace:
    data = read_json(path, "trtexec --exportTimes JSON")
    name = Path(path).name
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{name} is not trtexec --exportTimes output (a list of records).")
    if "startComputeMs" not in data[0]:
        raise UserError(f"{name}: records have no 'startComputeMs' (is it an --exportProfile?).")
    builder = TraceBuilder()
    builder.meta.update(source=str(path), format="trtexec-times", inferences=len(data))

    def column(key: str) -> np.ndarray:
        return np.array(
            [
                as_number(r[key], name, f"record {i}'s '{key}'") if key in r else np.nan
                for i, r in enumerate(data)
            ]
        )

    index = np.arange(len(data))
    for number, (start_key, end_key, kind, label, lane_name) in enumerate(STAGES):
        start, end = column(start_key), column(end_key)
        keep = ~(np.isnan(start) | np.isnan(end))
        lane = builder.lane(Lane("GPU (trtexec)", lane_name, 0, number))
        _add(builder, start[keep], end[keep], lane, kind, label, index[keep])
    start, end = column("startEnqMs"), column("endEnqMs")
    keep = ~(np.isnan(start) | np.isnan(end))
    host = builder.lane(Lane("trtexec host", "enqueue"))
    _add(builder, start[keep], end[keep], host, "cuda_api", "enqueue", index[keep])
    return builder.finish()


def _add(
    builder: TraceBuilder,
    start_ms: np.ndarray,
    end_ms: np.ndarray,
    lane: int,
    kind: str,
    label: str,
    inference: np.ndarray,
) -> None:
    """The inference number is the correlation id: enqueue ↔ its H2D/compute/D2H."""
    start, end = _ns(start_ms), _ns(end_ms)
    n = start.size
    builder.add_columns(
        start=start,
        dur=np.maximum(end - start, 0),
        lane=np.full(n, lane),
        kind=np.full(n, KIND[kind]),
        name=np.full(n, builder.intern(label)),
        corr=inference,
        nbytes=np.zeros(n),
        detail=np.zeros(n),
    )


LAYER_DETAIL = "TensorRT layer"  # marks layer events for the graph links (links.py)
DLA_DETAIL = "DLA (trtexec)"
# A DLA engine's profile rows (trtexec on Jetson): inputs copied "to nvm", outputs read "from
# nvm" (the wait for the DLA shows there), "copy finish" syncs, and the DLA loadable itself as a
# {ForeignNode[…]} between a "to nvm" and a "from nvm" — none of them a GPU kernel.
_DLA_ROW = re.compile(r" (?:to|from) nvm$| copy finish$")


def dla_rows(names: list[str]) -> set[int]:
    """The rows of a layer list that run on (or wait for) a DLA."""
    found: set[int] = set()
    inside = False
    for index, name in enumerate(names):
        if _DLA_ROW.search(name):
            found.add(index)
            inside = name.endswith(" to nvm") or (inside and not name.endswith(" from nvm"))
        elif inside and name.startswith("{ForeignNode["):
            found.add(index)
    return found


def layer_runs_trace(
    runs: list[list[tuple[str, float]]], lane: Lane, meta: dict[str, object]
) -> Trace:
    """TensorRT layer times without timestamps ((name, ms) per layer, per run) laid end to end,
    runs 1 µs apart: what trtexec ``--exportProfile`` and ``IProfiler`` give. A DLA engine's
    rows go on a DLA lane, never among the GPU's kernels."""
    builder = TraceBuilder()
    builder.meta.update(meta)
    lane_id = builder.lane(lane)
    layers = [layer for run in runs for layer in run]
    gaps = np.concatenate([[1000 * r] * len(run) for r, run in enumerate(runs)] or [[]])
    dur = _ns(np.array([ms for _, ms in layers], np.float64))
    start = np.concatenate([[0], np.cumsum(dur)[:-1]]).astype(np.int64) + gaps.astype(np.int64)
    on_dla = np.zeros(len(layers), bool)
    on_dla[sorted(dla_rows([name for name, _ in layers]))] = True
    dla_lane = (
        builder.lane(Lane("DLA (trtexec)", "DLA layers and transfers")) if on_dla.any() else 0
    )
    builder.add_columns(
        start=start,
        dur=dur,
        lane=np.where(on_dla, dla_lane, lane_id),
        kind=np.where(on_dla, KIND["other"], KIND["kernel"]),
        name=np.array([builder.intern(name) for name, _ in layers], np.int32),
        corr=-1,
        nbytes=0,
        detail=np.where(on_dla, builder.intern(DLA_DETAIL), builder.intern(LAYER_DETAIL)),
    )
    if on_dla.any():
        builder.meta["dla_layers"] = int(on_dla.sum())
    return builder.finish()


def load_profile_trace(path: str | Path) -> Trace:
    count, layers = load_profile(path)
    if not layers:
        raise UserError(f"{Path(path).name} has no layers.")
    return layer_runs_trace(
        [[(layer.name, layer.average_ms) for layer in layers]],
        Lane("GPU (trtexec)", "TensorRT layers (average inference)", 0, 0),
        {
            "source": str(path),
            "format": "trtexec-profile",
            "iterations": count,
            "synthetic_times": "per-layer averages over the profiled runs, laid end to end: "
            "durations are measured, start times are not",
        },
    )
