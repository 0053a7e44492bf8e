"""RecordingCuda — a RECORDING FAKE of the CUDA runtime for ``core/trace/pipeline.py`` (there is
no GPU in CI). It records every operation the loop issues, in order, and simulates the device
well enough to check what the issue order achieves: each stream runs its operations in order,
an operation waits for the events its stream waits on, H2D copies share one copy engine, D2H
copies another, and kernels one compute engine. The resulting intervals are plain numbers, so a
test can measure hidden copy time by interval arithmetic, independently of the tool's
statistics. It proves the loop's ordering; it proves nothing about a real GPU."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Op:
    kind: str  # copy_h2d, copy_d2h, compute, replay, record, wait
    stream: str
    start: float = 0.0
    end: float = 0.0
    args: dict[str, Any] = field(default_factory=dict)


class Buffer:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class RecordingCuda:
    def __init__(self, h2d_ms: float = 1.0, compute_ms: float = 2.0, d2h_ms: float = 1.0) -> None:
        self.durations = {"copy_h2d": h2d_ms, "copy_d2h": d2h_ms, "compute": compute_ms,
                          "replay": compute_ms}  # fmt: skip
        self.ops: list[Op] = []
        self.stream_ready: dict[str, float] = {}
        self.engine_free: dict[str, float] = {}
        self.pending_waits: dict[str, float] = {}
        self.event_time: dict[int, float] = {}
        self.timing_events: list[int] = []
        self.graphs = 0
        self._events = 0

    # -- the facade ---------------------------------------------------------------------------
    def stream(self, name: str) -> str:
        self.stream_ready[name] = 0.0
        return name

    def event(self, timing: bool = False) -> int:
        self._events += 1
        if timing:
            self.timing_events.append(self._events)
        return self._events

    def record(self, event: int, stream: str) -> None:
        self.event_time[event] = self.stream_ready[stream]
        self.ops.append(Op("record", stream, args={"event": event}))

    def wait(self, stream: str, event: int) -> None:
        self.ops.append(Op("wait", stream, args={"event": event}))
        self.pending_waits[stream] = max(
            self.pending_waits.get(stream, 0.0), self.event_time[event]
        )

    def copy(self, dst: Buffer, src: Buffer, stream: str) -> None:
        kind = "copy_h2d" if dst.name.startswith("dev") else "copy_d2h"
        self._run(kind, stream, {"dst": dst.name, "src": src.name})

    def compute(self, fn: Callable[[Any], Any], x: Buffer, out: Buffer, stream: str) -> None:
        self._run("compute", stream, {"input": x.name, "output": out.name})

    def graph(self, fn: Callable[[Any], Any], x: Buffer, out: Buffer, stream: str) -> str:
        self.graphs += 1
        self.ops.append(Op("capture", stream, args={"input": x.name, "output": out.name}))
        return f"graph {x.name}->{out.name}"

    def replay(self, graph: str, stream: str) -> None:
        self._run("replay", stream, {"graph": graph})

    def synchronize(self) -> None:
        pass

    def elapsed_ms(self, start: int, end: int) -> float:
        return self.event_time[end] - self.event_time[start]

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.ops.append(Op("range", "", args={"name": name}))
        yield

    # -- the simulated device ----------------------------------------------------------------
    def _run(self, kind: str, stream: str, args: dict[str, Any]) -> None:
        engine = {"copy_h2d": "h2d", "copy_d2h": "d2h"}.get(kind, "compute")
        start = max(self.stream_ready[stream], self.pending_waits.pop(stream, 0.0),
                    self.engine_free.get(engine, 0.0))  # fmt: skip
        end = start + self.durations[kind]
        self.stream_ready[stream] = end
        self.engine_free[engine] = end
        self.ops.append(Op(kind, stream, start, end, args))

    def intervals(self, *kinds: str) -> list[tuple[float, float]]:
        return [(op.start, op.end) for op in self.ops if op.kind in kinds]


def buffers(slots: int) -> Any:
    from deploylens.core.trace.pipeline import Buffers

    return Buffers(
        host_in=[Buffer(f"host_in{k}") for k in range(slots)],
        host_out=[Buffer(f"host_out{k}") for k in range(slots)],
        dev_in=[Buffer(f"dev_in{k}") for k in range(slots)],
        dev_out=[Buffer(f"dev_out{k}") for k in range(slots)],
    )
