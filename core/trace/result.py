"""The capture jobs' typed results: ``deploylens profile``, ``sweep`` and ``lab`` — the CLI's
text and exit code and the Timeline panel's status line read the same fields."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.cluster import Cluster
from deploylens.core.results import Evidence, Result, Verdict, judged
from deploylens.core.trace.diagnosis import Finding
from deploylens.core.trace.pipeline import Mode

GPU_BACKENDS = ("torch-cuda", "tensorrt")


@dataclass
class ProfileResult(Result):
    """``trace.profile``: headline figures from unprofiled passes, the profiled run apart."""

    FILES = ("trace",)

    backend: str  # ort | torch-cpu | torch-cuda | tensorrt
    mode: str
    batch: int
    streams: int
    iterations: int
    latency_ms_median: float
    latency_ms_p90: float
    throughput_per_s: float  # batch / median latency; a GPU pipeline: from the device's clock
    plain_wall_s: float
    profiled_wall_s: float
    trace: str
    notes: list[str] = field(default_factory=list)
    profiler_overhead: float | None = None  # None: not a stable figure here (flags say why)
    flags: list[str] = field(default_factory=list)
    pass_medians_ms: list[float] = field(default_factory=list)
    device: str = ""  # the GPU's name
    gpu_span_ms: float | None = None  # first H2D start to last D2H end, on the device's clock
    tensorrt: str = ""  # the TensorRT that ran the engine

    @property
    def on_gpu(self) -> bool:
        return self.backend in GPU_BACKENDS

    def headline(self) -> str:
        """Median latency and throughput without the profiler; the overhead where it is one."""
        overhead = self.profiler_overhead
        return (
            f"median {self.latency_ms_median:.3f} ms, {self.throughput_per_s:.1f} samples/s "
            "without the profiler" + (f", profiler overhead {overhead:.2f}×" if overhead else "")
        )

    def summary(self) -> str:
        """The headline (unprofiled passes), the overhead only where it is a figure, every
        flag."""
        overhead = self.profiler_overhead
        streams = f", {self.streams} stream(s)" if self.on_gpu else ""  # the CPU has none
        lines = [
            f"{self.backend} {self.mode}, batch {self.batch}{streams}: median latency "
            f"{self.latency_ms_median:.3f} ms, {self.throughput_per_s:.1f} samples/s without the "
            "profiler"
            + (" (batch / median latency)" if not self.on_gpu else "")
            + (f"; profiler overhead {overhead:.2f}× per iteration" if overhead else "")
        ]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  flag: {flag}" for flag in self.flags]
        lines.append(f"trace: {self.trace}")
        return "\n".join(lines)


@dataclass
class SweepPoint:
    """One (mode, streams, batch) of a sweep: measured, or skipped or failed with its reason."""

    mode: Mode
    streams: int
    batch: int
    status: str = "pending"  # ok | skipped | failed
    latency_ms_median: float | None = None
    throughput_per_s: float | None = None
    pattern: str | None = None
    trace: str = ""
    reason: str = ""
    flags: list[str] = field(default_factory=list)
    attempts: int = 1  # 2: its first try failed (on Ray) and it ran again
    node: str = ""  # the Ray node that ran it ("" in the worker)

    @property
    def label(self) -> str:
        return f"b{self.batch} s{self.streams} {self.mode}"


@dataclass
class SweepOutputs:
    json: str
    csv: str
    png: str


@dataclass
class SweepResult(Result):
    """``trace.sweep``: every point (ran, skipped or failed, each with its reason)."""

    FILES = ("outputs.json", "outputs.csv", "outputs.png")

    points: list[SweepPoint]
    outputs: SweepOutputs
    ran: int
    skipped: int
    failed: int
    retried: int
    on_cpu: bool
    executor: str
    executor_reason: str = ""
    ray_unavailable: str = ""  # why Ray could not start (the worker ran the points)
    cluster: Cluster | None = None

    def verdict(self) -> Verdict:
        """A sweep in which a point failed fails; one that measured nothing is INCONCLUSIVE."""
        missing = (
            f"no point ran ({self.skipped} skipped, each with its reason): nothing was measured"
        )
        evidence = Evidence(self.ran, "point(s) measured", "" if self.ran else missing)
        if self.failed:
            return judged(evidence, f"{self.failed} point(s) failed; the others stand.", "fail")
        return judged(evidence, f"{self.ran} point(s) measured, {self.skipped} skipped.", "pass")

    def where(self) -> str:
        cluster = self.cluster
        if cluster is None:
            return " in the worker"
        return f" on Ray ({cluster.nodes} node(s), {cluster.cpus:g} CPUs, {cluster.gpus:g} GPUs)"

    def summary(self) -> str:
        lines = [
            f"{'mode':10s} {'streams':>7s} {'batch':>6s} {'median ms':>10s} {'samples/s':>11s}"
            "  pattern"
        ]
        for p in self.points:
            head = f"{p.mode:10s} {p.streams:>7d} {p.batch:>6d}"
            if p.status == "ok":
                lines.append(
                    f"{head} {p.latency_ms_median or 0.0:>10.3f} {p.throughput_per_s or 0.0:>11.1f}"
                    f"  {p.pattern or '-'}"
                )
            else:
                lines.append(f"{head}  {p.status}: {p.reason}")
        lines.append(
            f"{self.ran} ran, {self.skipped} skipped, {self.failed} failed; "
            f"{self.outputs.csv}, {self.outputs.png}"
        )
        return "\n".join(lines)


@dataclass
class LabResult(Result):
    """``trace.lab``: a scenario's trace and what the diagnosis found in it."""

    FILES = ("trace",)

    lab: str
    trace: str
    synthetic: bool  # made up (no CUDA device), not measured
    device: str
    pattern: str | None
    findings: list[Finding] = field(default_factory=list)

    def made(self) -> str:
        if self.synthetic:
            return "a SYNTHETIC trace (made up, not measured: no CUDA device here)"
        return f"measured on {self.device}"

    def summary(self) -> str:
        lines = [
            f"lab {self.lab}: {self.made()} → {self.trace}",
            f"diagnosis: {self.pattern or 'no pattern'}",
        ]
        lines += [f"  {finding.text()}".rstrip() for finding in self.findings]
        return "\n".join(lines)
