"""What bounds a GPU run, each claim computed from the trace and consistent with the capture
that made it.

Patterns (each with the numbers behind it):
- ``launch-bound``: the GPU waits between kernels while the CPU launches them — idle share of
  the GPU span, the share of kernels under 10 µs, the CPU's launch-call time against the kernels'
  time. Fix: CUDA graphs, a larger batch.
- ``h2d-bound`` / ``d2h-bound``: copies in one direction take most of the GPU's busy time.
  Same-direction copies share one copy engine (they queue behind each other even on different
  streams); pageable host memory makes them synchronous.
- ``compute-bound``: kernels keep the GPU busy; with several streams, kernels of different
  streams barely run at once — one stream already fills the GPU, so more streams (or a bigger
  batch, at ~proportional cost) cannot add throughput.

``diagnose`` reads ``trace.meta["capture"]`` (``TRACE.capture.json``) and never recommends what
the capture already did (pipelined copies, CUDA graphs, several streams, pinned memory). Idle
and busy shares are judged against the same iterations run without the profiler where the
capture timed them (``unprofiled_gpu_span_ms``): the profiler's cost per launch stretches the
gaps, and a trace alone called eager resnet18 at batch 32 launch-bound on an H200.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deploylens.core.trace.intervals import merged
from deploylens.core.trace.model import KIND, Trace, member
from deploylens.core.trace.pipeline import GRAPHED, PIPELINED

SMALL_KERNEL_NS = 10_000  # "kernels under 10 µs"
UNPROFILED_SLACK = 1.15  # GPU work of the trace up to this × the unprofiled span still fits it
LAUNCH_CALLS = ("LaunchKernel", "cudaGraphLaunch", "cuGraphLaunch", "LaunchCooperative")
# Launch-bound needs launch evidence: kernels launched one by one (at least half of them by a
# launch call in the trace) and CPU time in those calls worth a tenth of the kernels' own — a
# decode trace with 11 launch calls (0.0×) and one blocking copy was called launch-bound.
LAUNCHED_SHARE = 0.5
LAUNCH_TIME_SHARE = 0.1
CAPTURED_SHARE = 0.5  # a trace whose launches are mostly recorded into a graph is a capture


@dataclass
class Finding:
    pattern: str
    score: float  # 0..1: how strongly the trace shows it (the largest names the run)
    claim: str
    advice: str = ""
    evidence: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        return self.claim + (f" {self.advice}" if self.advice else "")


@dataclass
class Diagnosis:
    """The patterns found in a trace, strongest first, with the measures behind them."""

    pattern: str | None  # the strongest finding's (None: nothing found, or not judged)
    findings: list[Finding] = field(default_factory=list)
    measures: dict[str, float] = field(default_factory=dict)
    capture: dict[str, Any] = field(default_factory=dict)  # TRACE.capture.json, as read
    skipped: str = ""  # why it was not judged ("" when it was)


def _union_ns(start: np.ndarray, end: np.ndarray) -> int:
    s, e = merged(start, end)
    return int((e - s).sum())


def _pairwise_overlap_ns(parts: list[tuple[np.ndarray, np.ndarray]], everything: int) -> int:
    """Time during which events of two or more of ``parts`` (each a lane's intervals) run at
    once: Σ union of each − union of all (``everything``, which the caller has: merging every
    kernel again cost ~0.15 s of a 10M-event trace's statistics) is the doubly-counted time (a
    lower bound that is exact for two lanes)."""
    if len(parts) < 2:
        return 0
    each = sum(_union_ns(s, e) for s, e in parts)
    return max(each - everything, 0)


def _judged_span(span: int, busy: int, capture: dict[str, Any]) -> int:
    """The span idle time is judged against: the same iterations without the profiler where the
    capture timed them (``unprofiled_gpu_span_ms``), since the profiler's cost per launch
    stretches every gap — eager resnet18 at batch 32 on an H200 was 33 % idle in its trace and
    3 % without the profiler. The trace's own span where that run was slower (noise) or where
    the trace's GPU work does not fit in it (not the same work)."""
    ms = capture.get("unprofiled_gpu_span_ms")
    if not isinstance(ms, int | float) or not 0 < ms < 1e12:  # NaN fails both comparisons
        return span
    unprofiled = int(ms * 1e6)
    if unprofiled >= span or busy > UNPROFILED_SLACK * unprofiled:
        return span
    return unprofiled


def _judged(m: dict[str, Any], share: float) -> str:
    """How a share of the span reads: without the profiler where it was judged so."""
    if not m.get("unprofiled"):
        return f"{share:.0f}% of its span"
    return f"{share:.0f}% of its span without the profiler"


def measures(trace: Trace) -> dict[str, Any]:
    """The numbers the patterns are judged by: the trace's own events, and the span of the same
    iterations without the profiler where the capture timed it (``_judged_span``)."""
    gpu_kinds = (KIND["kernel"], KIND["memcpy_h2d"], KIND["memcpy_d2h"], KIND["memcpy_d2d"],
                 KIND["memset"], KIND["memcpy_p2p"], KIND["memcpy"])  # fmt: skip
    gpu = member(trace.kind, gpu_kinds)
    result: dict[str, Any] = {"gpu_events": int(gpu.sum())}
    if not gpu.any():
        return result
    start, end = trace.start, trace.start + trace.dur
    gpu_start, gpu_end = start[gpu], end[gpu]
    first, last = int(gpu_start.min()), int(gpu_end.max())
    span = max(last - first, 1)
    busy = _union_ns(gpu_start, gpu_end)
    del gpu_start, gpu_end
    kernels = trace.kind == KIND["kernel"]
    kernel_dur = trace.dur[kernels].astype(np.int64)
    by_kind = {
        name: int(trace.dur[trace.kind == KIND[name]].astype(np.int64).sum())
        for name in ("memcpy_h2d", "memcpy_d2h", "kernel")
    }
    lanes = trace.lane[kernels]
    kernel_start, kernel_end = start[kernels], end[kernels]  # once, not per lane and side
    kernel_parts = [
        (kernel_start[lanes == lane], kernel_end[lanes == lane]) for lane in np.unique(lanes)
    ]
    api = trace.kind == KIND["cuda_api"]
    launch = np.zeros(api.sum(), bool)
    api_names = trace.name[api]
    # names are matched among those the API calls and copies use, never across every name
    # (a trace can hold 50,000 kernel names; scanning them all cost more than the statistics)
    called = {i: trace.names[i] for i in np.unique(api_names).tolist()}
    launch_ids = [i for i, n in called.items() if any(c in n for c in LAUNCH_CALLS)]
    if launch_ids:
        launch = member(api_names, launch_ids, len(trace.names))
    graph_ids = [i for i, n in called.items() if "GraphLaunch" in n]
    graph_launches = int(member(api_names, graph_ids, len(trace.names)).sum()) if graph_ids else 0
    windows, captured = _captured(trace, api, api_names, called, launch)
    pageable = 0
    for kind in ("memcpy_h2d", "memcpy_d2h"):
        details = trace.detail[trace.kind == KIND[kind]]
        used = [i for i in np.unique(details).tolist() if 0 <= i < len(trace.names)]
        pageable_ids = [i for i in used if "ageable" in trace.names[i]]
        pageable += int(np.isin(details, pageable_ids).sum()) if pageable_ids else 0
    judged = _judged_span(span, busy, trace.meta.get("capture") or {})
    h2d = trace.kind == KIND["memcpy_h2d"]
    h2d_lanes = trace.lane[h2d]
    h2d_start, h2d_end = start[h2d], end[h2d]
    h2d_parts = [(h2d_start[h2d_lanes == lane], h2d_end[h2d_lanes == lane])
                 for lane in np.unique(h2d_lanes)]  # fmt: skip
    kernel_union = _union_ns(kernel_start, kernel_end)
    h2d_union = _union_ns(h2d_start, h2d_end) if len(h2d_parts) > 1 else 0
    result.update(
        span_ns=span,
        busy_ns=busy,
        judged_span_ns=judged,
        unprofiled=float(judged != span),
        idle_percent=100.0 * max(judged - busy, 0) / judged,
        trace_idle_percent=100.0 * (span - busy) / span,
        kernel_union_ns=kernel_union,
        kernel_ns=by_kind["kernel"],
        h2d_ns=by_kind["memcpy_h2d"],
        d2h_ns=by_kind["memcpy_d2h"],
        kernels=int(kernels.sum()),
        small_kernel_percent=100.0 * float((kernel_dur < SMALL_KERNEL_NS).mean())
        if kernel_dur.size
        else 0.0,
        kernel_streams=len(kernel_parts),
        kernel_concurrent_ns=_pairwise_overlap_ns(kernel_parts, kernel_union),
        launch_ns=int(trace.dur[api][launch].astype(np.int64).sum()),
        launches=int(launch.sum()),
        capture_windows=windows,
        captured_launches=captured,
        graph_launches=graph_launches,
        pageable_copies=pageable,
        h2d_streams=len(h2d_parts),
        h2d_concurrent_ns=_pairwise_overlap_ns(h2d_parts, h2d_union),
    )
    return result


def _captured(
    trace: Trace, api: np.ndarray, api_names: np.ndarray, called: dict[int, str], launch: np.ndarray
) -> tuple[int, int]:
    """(capture windows, launch calls inside them): launches between a thread's
    ``cudaStreamBeginCapture`` and ``cudaStreamEndCapture`` are recorded into a graph, not
    run — their kernels, if a trace shows any, are not the replay's."""
    begin_ids = [i for i, n in called.items() if "BeginCapture" in n]
    end_ids = [i for i, n in called.items() if "EndCapture" in n]
    if not begin_ids or not end_ids or not launch.any():
        return 0, 0
    count = len(trace.names)
    starts, lanes = trace.start[api], trace.lane[api]
    begins, ends = member(api_names, begin_ids, count), member(api_names, end_ids, count)
    windows = captured = 0
    for lane in np.unique(lanes[begins]).tolist():
        own = lanes == lane
        opened = np.sort(starts[own & begins])
        closed = np.sort(starts[own & ends])
        at = starts[own & launch]
        for first in opened.tolist():
            after = closed[closed >= first]
            if not after.size:
                continue
            windows += 1
            captured += int(((at >= first) & (at <= int(after[0]))).sum())
    return windows, captured


def diagnose(trace: Trace, m: dict[str, Any] | None = None) -> list[Finding]:
    """The patterns the trace shows, strongest first (empty without GPU work). A trace that
    is mostly a CUDA-graph capture gets that said, and no launch-, copy- or compute-bound
    verdict: what it recorded did not run."""
    m = m if m is not None else measures(trace)
    if not m.get("span_ns"):
        return []
    captured, launches = m.get("captured_launches", 0), m.get("launches", 0)
    if captured and captured >= CAPTURED_SHARE * launches:
        return [
            Finding(
                "graph-capture",
                1.0,
                f"A CUDA-graph capture: {captured:,} of the {launches:,} launch calls were made "
                f"between cudaStreamBeginCapture and cudaStreamEndCapture "
                f"({m['capture_windows']:,} window(s)) — recorded into a graph, not run — so "
                "this trace's launch gaps and GPU busy time say nothing of the graph's replays.",
                "Profile the replays (cudaGraphLaunch after the capture) to judge them.",
                {"captured_launches": float(captured), "launches": float(launches)},
            )
        ]
    capture = trace.meta.get("capture") or {}
    mode, streams = capture.get("mode"), int(capture.get("streams") or 0)
    findings: list[Finding] = []
    busy = max(m["busy_ns"], 1)
    span = m["span_ns"]

    idle, small = m["idle_percent"], m["small_kernel_percent"]
    launch_share = m["launch_ns"] / max(m["kernel_ns"], 1)
    graphed = mode in GRAPHED or m.get("graph_launches", 0) > 0  # ours, or a foreign capture's
    run_launches = launches - captured
    launched = graphed or (
        run_launches >= LAUNCHED_SHARE * m["kernels"] and launch_share >= LAUNCH_TIME_SHARE
    )
    if m["kernels"] and idle >= 30 and small >= 50 and run_launches > 0 and launched:
        if graphed:
            count = m.get("graph_launches", 0)
            said = "" if mode in GRAPHED else f" ({count:,} graph launches in the trace)"
            advice = (
                f"The capture already replays a CUDA graph{said}: raise the batch so each kernel "
                "does more work per launch."
            )
        elif mode == "pipelined":
            advice = (
                "Replay the compute as CUDA graphs with the copies still pipelined (--mode "
                "graph-pipelined): between launches the GPU has nothing to hide the copies under."
            )
        else:
            advice = (
                "Replay the compute as a CUDA graph, or raise the batch so each kernel does more."
            )
        findings.append(
            Finding(
                "launch-bound",
                min(1.0, idle / 100 * (0.5 + small / 200)),
                f"Launch-bound: the GPU is idle between kernels {_judged(m, idle)}"
                + (f" ({m['trace_idle_percent']:.0f}% in this trace)" if m["unprofiled"] else "")
                + f", {small:.0f}% of the {m['kernels']:,} kernels run under 10 µs, and the CPU "
                f"spent {m['launch_ns'] / 1e6:.2f} ms in {m['launches']:,} launch calls against "
                f"{m['kernel_ns'] / 1e6:.2f} ms of kernels ({launch_share:.1f}×).",
                advice,
                {
                    "idle_percent": idle,
                    "small_kernel_percent": small,
                    "launch_over_kernel": launch_share,
                },
            )
        )
    for direction, key in (("h2d", "h2d_ns"), ("d2h", "d2h_ns")):
        share = m[key] / busy
        if share < 0.4:
            continue
        name = "H2D (host to device)" if direction == "h2d" else "D2H (device to host)"
        notes = []
        if m["pageable_copies"]:
            notes.append(
                f"{m['pageable_copies']} copies use pageable host memory (staged and "
                "synchronous): pin the host buffers"
            )
        if direction == "h2d" and m["h2d_streams"] > 1:
            together = m["h2d_concurrent_ns"] / max(m["h2d_ns"], 1)
            notes.append(
                f"H2D copies on {m['h2d_streams']} streams ran at once {100 * together:.0f}% of "
                "their time: same-direction copies share one copy engine and queue behind each "
                "other; only an H2D and a D2H overlap"
            )
        advice = "Send less data (a smaller input dtype, preprocessing on the GPU) or overlap "
        advice += (
            "the copies with compute"
            if mode not in PIPELINED
            else "more compute per byte (the capture already pipelines copies with compute)"
        )
        findings.append(
            Finding(
                f"{direction}-bound",
                share,
                f"{name}-bound: {name.split(' ')[0]} copies take {100 * share:.0f}% of the "
                f"GPU's busy time ({m[key] / 1e6:.2f} of {busy / 1e6:.2f} ms)"
                + ("; " + "; ".join(notes) if notes else "")
                + ".",
                advice + ".",
                {"copy_share": share},
            )
        )
    kernel_busy = min(m["kernel_union_ns"] / m["judged_span_ns"], 1.0)
    if kernel_busy >= 0.7:
        concurrent = m["kernel_concurrent_ns"] / max(m["kernel_union_ns"], 1)
        claim = f"Compute-bound: kernels keep the GPU busy {_judged(m, 100 * kernel_busy)}"
        if m["unprofiled"]:
            claim += f" ({100 * m['kernel_union_ns'] / span:.0f}% in this trace)"
        if m["kernel_streams"] > 1:
            claim += (
                f", and kernels of {m['kernel_streams']} streams ran at once only "
                f"{100 * concurrent:.0f}% of that time: one stream already fills the GPU, so "
                "more streams cannot overlap"
            )
        advice = (
            "A bigger batch costs about proportionally more here (the GPU is already full); "
            "fewer or cheaper kernels (lower precision, fusion) are what helps."
        )
        if streams > 1 or m["kernel_streams"] > 1:
            advice += " More streams will not help."
        findings.append(
            Finding(
                "compute-bound",
                kernel_busy,
                claim + ".",
                advice,
                {"kernel_busy": kernel_busy, "kernel_concurrency": concurrent},
            )
        )
    findings.sort(key=lambda f: -f.score)
    return findings


def diagnosis(trace: Trace) -> Diagnosis:
    """The patterns (for ``trace_stats``, the CLI, the lab and the Timeline) with the measures.
    A trace whose times are laid out, not measured (trtexec --exportProfile, IProfiler), has no
    idle time or overlap to judge: it gets no diagnosis, and says why."""
    capture = trace.meta.get("capture") or {}
    if trace.meta.get("synthetic_times"):
        return Diagnosis(
            None,
            capture=capture,
            skipped="the trace's times are laid end to end, not measured: idle time, "
            "overlap and launch gaps cannot be judged from it",
        )
    m = measures(trace)
    findings = diagnose(trace, m)
    return Diagnosis(
        findings[0].pattern if findings else None,
        findings,
        {k: float(v) for k, v in m.items() if isinstance(v, int | float)},
        capture,
    )
