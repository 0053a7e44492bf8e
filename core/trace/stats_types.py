"""A trace's figures as typed rows: what ``trace_stats`` answers and the Timeline's summary, its
range view, ``deploylens trace`` and the CSV export all read by field (a misspelt key was a
``KeyError`` on the UI thread's callback; now it is a type error ``make lint`` sees).

The share of time with k streams busy is one method, so the CLI and the Timeline cannot give
two different percentages for the same capture (they did: the CLI left idle time out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from deploylens.core.results import Evidence, Verdict, judged
from deploylens.core.trace.diagnosis import Diagnosis
from deploylens.core.typed import AsDict


@dataclass(slots=True)  # not frozen: a frozen init costs 5x, and a trace has 50,000 names
class KernelRow:
    """One kernel name (or ONNX Runtime node, or CPU op, in a trace without kernels)."""

    name: str
    count: int
    total_us: float
    mean_us: float
    median_us: float
    p90_us: float
    p99_us: float
    min_us: float
    max_us: float
    gpu_percent: float  # of all the table's time (a CPU op's: inclusive)


@dataclass(frozen=True)
class StreamRow:
    lane: str
    device: int
    stream: int
    events: int
    busy_percent: float  # of the whole GPU span


@dataclass(frozen=True)
class CopyRow:
    kind: str  # memcpy_h2d | memcpy_d2h | ...
    memory: str  # pageable | pinned | device | ""
    count: int
    bytes: int
    total_us: float
    mean_gbps: float | None
    median_gbps: float | None


@dataclass(frozen=True)
class Gap:
    """A stretch between the first and last GPU event of a device where no stream worked."""

    device: int
    start_ns: int
    gap_us: float


@dataclass
class Overlap:
    """Copy time hidden behind kernels, and time by how many streams were busy at once."""

    copy_ns: int = 0
    hidden_ns: int = 0
    concurrency_ns: dict[int, int] = field(default_factory=dict)  # streams busy → ns (k ≥ 1)
    gaps: list[Gap] = field(default_factory=list)
    hidden_percent: float | None = None  # None: no copies
    idle_ns: int = 0  # no stream busy, between a device's first and last GPU event

    def busy_shares(self) -> list[tuple[str, float]]:
        """("1 busy", %) … ("idle", %) of the GPU span: the Timeline's and the CLI's table."""
        total = sum(self.concurrency_ns.values()) + self.idle_ns
        if not total:
            return []
        shares = [(f"{k} busy", 100 * ns / total) for k, ns in sorted(self.concurrency_ns.items())]
        return [*shares, ("idle", 100 * self.idle_ns / total)]


@dataclass
class TraceStats(AsDict):
    """Everything the timeline says of a trace (or of a range of it)."""

    source: str
    format: str
    version: str
    events: int
    lanes: int
    span_us: float
    kinds: dict[str, int]
    table: str  # what the kernel table counts: kernel | ort_node | cpu_op
    kernels: list[KernelRow]
    streams: list[StreamRow]
    overlap: Overlap
    copies: list[CopyRow]
    hints: list[str]
    diagnosis: Diagnosis
    # events in categories this version does not know: counted as "other", never as kernels
    unknown_categories: dict[str, int] = field(default_factory=dict)
    range_ns: tuple[int, int] | None = None  # the range a range view covers
    import_s: float | None = None  # seconds to import the file (the CLI's)

    def verdict(self, nothing_measured: str = "") -> Verdict:
        """What ``deploylens trace`` concludes, and its exit status: the trace read and its
        headline (the strongest pattern), resting on the events it holds; a trace in which
        nothing was measured fails with the reason (``meta["nothing_measured"]``)."""
        evidence = Evidence(self.events, "event(s) in scope", nothing_measured)
        if nothing_measured:
            return judged(evidence, f"nothing measured: {nothing_measured}", "fail")
        finding = self.diagnosis.findings[0] if self.diagnosis.findings else None
        said = finding.pattern if finding is not None else "read (no pattern judged)"
        return judged(evidence, said, "pass")

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """The CSV export's tables, one row per line (columns: the rows' fields)."""
        return {
            name: [dataclasses.asdict(row) for row in rows]
            for name, rows in (
                ("kernels", self.kernels),
                ("streams", self.streams),
                ("copies", self.copies),
            )
        }
