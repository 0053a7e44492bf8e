"""The trace model: columnar NumPy arrays, never a Python object per event (DESIGN.md §5).

Every event is one row of ``start``/``dur`` (ns), ``lane``, ``kind``, ``name`` (interned id),
``corr`` (correlation id linking a CUDA API call to its kernel/copy), ``nbytes`` and ``detail``
(an interned string: grid/block of a kernel, memory kinds of a copy, an ORT node's op type).
Lanes are grouped device → stream and process → thread; NVTX/annotation ranges get lanes of
their own per thread (nested ranges keep their depth).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KINDS = (
    "kernel",
    "memcpy_h2d",
    "memcpy_d2h",
    "memcpy_d2d",
    "memcpy_p2p",
    "memcpy",
    "memset",
    "nvtx",
    "cuda_api",
    "cpu_op",
    "ort_node",
    "other",
)
KIND = {name: index for index, name in enumerate(KINDS)}
COPY_KINDS = tuple(
    KIND[k] for k in ("memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memcpy_p2p", "memcpy")
)
GPU_KINDS = (KIND["kernel"], KIND["memset"], *COPY_KINDS)


@dataclass(frozen=True)
class Lane:
    group: str  # "GPU 0", "process 1234"
    name: str  # "stream 7", "thread 5678", "NVTX thread 5678"
    device: int = -1  # CUDA device, -1 for host lanes
    stream: int = -1

    @property
    def title(self) -> str:
        return f"{self.group} / {self.name}"


@dataclass
class Trace:
    start: np.ndarray
    dur: np.ndarray
    lane: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    corr: np.ndarray
    nbytes: np.ndarray
    detail: np.ndarray
    names: list[str]
    lanes: list[Lane]
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.start.size)

    @property
    def end(self) -> np.ndarray:
        return self.start + self.dur

    def span(self) -> tuple[int, int]:
        if not len(self):
            return 0, 0
        return int(self.start.min()), int(self.end.max())

    def mask(self, *kinds: str) -> np.ndarray:
        return np.isin(self.kind, [KIND[k] for k in kinds])

    def event(self, index: int) -> dict[str, Any]:
        """One event as a dict, for the details pane and tests."""
        lane = self.lanes[int(self.lane[index])]
        return {
            "name": self.names[int(self.name[index])],
            "kind": KINDS[int(self.kind[index])],
            "start_ns": int(self.start[index]),
            "dur_ns": int(self.dur[index]),
            "lane": lane.title,
            "device": lane.device,
            "stream": lane.stream,
            "correlation": int(self.corr[index]),
            "bytes": int(self.nbytes[index]),
            "detail": self.names[int(self.detail[index])],
        }

    def nbytes_in_memory(self) -> int:
        arrays = (
            self.start,
            self.dur,
            self.lane,
            self.kind,
            self.name,
            self.corr,
            self.nbytes,
            self.detail,
        )
        return sum(a.nbytes for a in arrays) + sum(len(s) + 49 for s in self.names)


class TraceBuilder:
    """Appends rows into compact ``array`` buffers (8 bytes per number, no per-event objects)."""

    def __init__(self) -> None:
        self._cols = {
            c: array("q")
            for c in ("start", "dur", "lane", "kind", "name", "corr", "nbytes", "detail")
        }
        self._names: dict[str, int] = {"": 0}
        self._lanes: dict[Lane, int] = {}
        self.meta: dict[str, Any] = {}

    def intern(self, text: str) -> int:
        found = self._names.get(text)
        if found is None:
            found = self._names[text] = len(self._names)
        return found

    def lane(self, lane: Lane) -> int:
        found = self._lanes.get(lane)
        if found is None:
            found = self._lanes[lane] = len(self._lanes)
        return found

    def add(
        self,
        start: int,
        dur: int,
        lane: int,
        kind: int,
        name: str,
        corr: int = -1,
        nbytes: int = 0,
        detail: str = "",
    ) -> None:
        c = self._cols
        c["start"].append(start)
        c["dur"].append(max(dur, 0))
        c["lane"].append(lane)
        c["kind"].append(kind)
        c["name"].append(self.intern(name))
        c["corr"].append(corr)
        c["nbytes"].append(nbytes)
        c["detail"].append(self.intern(detail) if detail else 0)

    def __len__(self) -> int:
        return len(self._cols["start"])

    def finish(self) -> Trace:
        """Arrays sorted by (lane, start) in compact dtypes; times stay absolute ns."""
        c = {
            k: np.frombuffer(v, dtype=np.int64) if len(v) else np.zeros(0, np.int64)
            for k, v in self._cols.items()
        }
        order = np.lexsort((c["start"], c["lane"]))
        dtypes = {"lane": np.int32, "kind": np.int8, "name": np.int32, "detail": np.int32}
        columns = {
            k: np.ascontiguousarray(v[order], dtype=dtypes.get(k, np.int64)) for k, v in c.items()
        }
        self._cols = {}
        return Trace(**columns, names=list(self._names), lanes=list(self._lanes), meta=self.meta)
