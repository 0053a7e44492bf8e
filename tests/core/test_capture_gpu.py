"""The GPU half of the capture (issue 16's verification), run where a CUDA GPU is — skipped in
CI and on any machine without one, with the reason in the skip. Each check is independent of the
tool's own statistics: hidden copy time is interval arithmetic on the trace file's events, and
throughput is compared between two captures' CUDA-event figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploylens.core.trace.capture import CaptureSettings, capture_torch


def intervals(trace_file: Path, *categories: str) -> list[tuple[float, float]]:
    """(start, end) in µs of the events of ``categories``, from the Kineto JSON directly."""
    events = json.loads(trace_file.read_text())["traceEvents"]
    return [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in categories]


def merged(spans: list[tuple[float, float]]) -> list[list[float]]:
    """The union of ``spans`` as disjoint intervals, in order."""
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def copy_hidden_by_intervals(trace_file: Path) -> float:
    """Share of memcpy time during which some kernel runs."""
    copies = intervals(trace_file, "gpu_memcpy")
    kernels = merged(intervals(trace_file, "kernel"))
    hidden = sum(max(0.0, min(b, d) - max(a, c)) for a, b in copies for c, d in kernels)
    return hidden / sum(b - a for a, b in copies)


def resnet18() -> tuple[Any, Any]:
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    return torchvision.models.resnet18(weights=None).eval(), torch


@pytest.mark.gpu
def test_resnet18_batch_32_pipelined_hides_copy_time_that_serial_does_not(tmp_path: Path) -> None:
    """Eager pipelining overlaps copies with kernels — but only where kernels run: eager resnet18
    on an H100 is launch-bound (the GPU idles between small kernels), and two device runs hid
    23 % and 36 % of copy time, not the half once asked of it (an H200 hid 60 % and 61 %);
    graph-pipelined (below) is the mode that hides half everywhere."""
    module, torch = resnet18()
    example = torch.rand(1, 3, 224, 224)
    hidden = {}
    for mode in ("serial", "pipelined"):
        settings = CaptureSettings(iterations=32, mode=mode, batch=32, streams=1)
        capture_torch(module, example, str(tmp_path / f"{mode}.json"), settings, device="cuda")
        hidden[mode] = copy_hidden_by_intervals(tmp_path / f"{mode}.json")
    assert hidden["serial"] < 0.02 and hidden["pipelined"] >= 0.15, hidden


@pytest.mark.gpu
def test_resnet18_batch_32_graph_pipelined_hides_half_the_copy_time(tmp_path: Path) -> None:
    """Replayed graphs keep the GPU busy while the next batch's copy runs (eager resnet18 on an
    H100 is launch-bound: the first device run hid 23 % pipelined with one compute stream)."""
    module, torch = resnet18()
    settings = CaptureSettings(iterations=32, mode="graph-pipelined", batch=32, streams=1)
    result = capture_torch(module, torch.rand(1, 3, 224, 224), str(tmp_path / "g.json"), settings,
                           device="cuda")  # fmt: skip
    assert copy_hidden_by_intervals(tmp_path / "g.json") >= 0.5, result


@pytest.mark.gpu
def test_cuda_graph_at_batch_1_is_twice_eager_throughput(tmp_path: Path) -> None:
    module, torch = resnet18()
    example = torch.rand(1, 3, 224, 224)
    eager, graph = (
        capture_torch(module, example, str(tmp_path / f"{mode}.json"),
                      CaptureSettings(iterations=64, mode=mode), device="cuda")
        for mode in ("serial", "cudagraph")
    )  # fmt: skip
    assert graph.throughput_per_s >= 2 * eager.throughput_per_s, (eager, graph)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["h2d-bound", "d2h-bound", "compute-bound", "launch-bound"])
def test_each_lab_scenario_is_diagnosed_on_the_gpu(name: str, tmp_path: Path) -> None:
    from deploylens.core.trace.lab import run_lab

    result = run_lab(name, str(tmp_path / f"{name}.json"))
    assert not result.synthetic and result.pattern == name, result.findings


@pytest.mark.gpu
def test_the_diagnosis_of_eager_batch_32_agrees_with_the_gpu_without_the_profiler(
    tmp_path: Path,
) -> None:
    """The first H200 run called eager resnet18 at batch 32 launch-bound from its trace (33 %
    idle) while its GPU was ~96 % busy without the profiler: idle time is now judged against
    the capture's unprofiled span. Checked here by interval arithmetic on the trace file."""
    from deploylens.core.trace.diagnosis import diagnosis
    from deploylens.core.trace.load import load_trace

    module, torch = resnet18()
    path = tmp_path / "serial.json"
    settings = CaptureSettings(iterations=20, mode="serial", batch=32, streams=1)
    result = capture_torch(module, torch.rand(1, 3, 224, 224), str(path), settings, device="cuda")
    gpu = merged(intervals(path, "kernel", "gpu_memcpy", "gpu_memset"))
    busy = sum(b - a for a, b in gpu) / (1e3 * (result.gpu_span_ms or float("inf")))
    found = diagnosis(load_trace(path))
    assert found.measures["unprofiled"] == 1.0, found.measures
    assert found.measures["idle_percent"] == pytest.approx(100 * max(1 - busy, 0), abs=5)
    if busy >= 0.8:
        assert found.pattern != "launch-bound", (busy, found.findings)
