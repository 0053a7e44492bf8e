"""Trace headlines that rest on evidence (issue 63): a CUDA-graph capture (launches recorded
between cudaStreamBeginCapture and EndCapture) gets no launch- or compute-bound verdict; a
launch-bound verdict needs launch calls for the kernels and CPU time in them; copy advice only
for the copy kinds the trace holds; ``trace --json`` carries the reason for its exit status.
Every trace is written by the test (Kineto's Chrome format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploylens.core.cli import main
from deploylens.core.trace.diagnosis import diagnose, measures
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.stats import trace_stats
from tests.helpers.hostile_traces import nsys_without_gpu_tables


def _kernel(i: int, ts: float, dur: float = 2.0, stream: int = 7) -> dict[str, object]:
    return {"ph": "X", "cat": "kernel", "name": f"k{i % 5}", "pid": 0, "tid": stream, "ts": ts,
            "dur": dur, "args": {"device": 0, "stream": stream, "correlation": i}}  # fmt: skip


def _api(name: str, ts: float, dur: float = 3.0, corr: int = -1) -> dict[str, object]:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 2, "ts": ts,
            "dur": dur, "args": {"correlation": corr}}  # fmt: skip


def _write(tmp_path: Path, name: str, events: list[dict[str, object]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _eager(count: int, launch_dur: float = 3.0) -> list[dict[str, object]]:
    """Small kernels 10 µs apart, each launched by its own cudaLaunchKernel: launch-bound."""
    events = []
    for i in range(count):
        events.append(_api("cudaLaunchKernel", 995.0 + i * 10, launch_dur, i))
        events.append(_kernel(i, 1000.0 + i * 10))
    return events


def test_eager_small_kernels_with_their_launches_are_launch_bound(tmp_path: Path) -> None:
    trace = load_trace(_write(tmp_path, "eager.json", _eager(300)))
    found = [f.pattern for f in diagnose(trace)]
    assert found[0] == "launch-bound", found


def test_a_capture_is_said_as_a_capture_not_judged(tmp_path: Path) -> None:
    """421 of 428 launches inside capture windows: recorded, not run. It was diagnosed
    "launch-bound … replay as a CUDA graph" or "compute-bound"."""
    events = _eager(421)
    events.insert(0, _api("cudaStreamBeginCapture", 900.0, 1.0))
    events.append(_api("cudaStreamEndCapture", 1000.0 + 421 * 10, 5.0))
    events += [_api("cudaLaunchKernel", 9000.0 + i * 10, 3.0, 5000 + i) for i in range(7)]
    events += [_kernel(5000 + i, 9005.0 + i * 10) for i in range(7)]
    trace = load_trace(_write(tmp_path, "capture.json", events))
    m = measures(trace)
    assert (m["capture_windows"], m["captured_launches"], m["launches"]) == (1, 421, 428)
    found = diagnose(trace, m)
    assert [f.pattern for f in found] == ["graph-capture"]
    assert "421 of the 428 launch calls" in found[0].claim
    assert not any(p in found[0].text() for p in ("Launch-bound", "Compute-bound"))
    # the same launches outside any window (the Begin after them) are judged as before
    moved = [e for e in events if e["name"] != "cudaStreamBeginCapture"]
    moved.append(_api("cudaStreamBeginCapture", 99_000.0, 1.0))
    assert diagnose(load_trace(_write(tmp_path, "eager2.json", moved)))[0].pattern != (
        "graph-capture"
    )


def test_launch_bound_needs_launch_evidence(tmp_path: Path) -> None:
    """A decode trace: 300 small kernels with gaps but 11 launch calls (the tool's own ratio
    0.0×) was "launch-bound"; the idle time was a blocking copy, not launches."""
    events = [_kernel(i, 1000.0 + i * 10) for i in range(300)]
    events += [_api("cudaLaunchKernel", 990.0 + i * 300, 0.01, i) for i in range(11)]
    found = [f.pattern for f in diagnose(load_trace(_write(tmp_path, "decode.json", events)))]
    assert "launch-bound" not in found, found
    cheap = _eager(300, launch_dur=0.01)  # a launch per kernel, but 0.0× of the kernels' time
    assert "launch-bound" not in [
        f.pattern for f in diagnose(load_trace(_write(tmp_path, "cheap.json", cheap)))
    ]


def test_copy_advice_only_for_copies_the_trace_holds(tmp_path: Path) -> None:
    """Only device-to-device copies: no host-to-device pipelining advice."""
    events = [_kernel(i, 1000.0 + i * 100, dur=50.0) for i in range(20)]
    events += [
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0,
         "tid": 7, "ts": 1060.0 + i * 100, "dur": 30.0,
         "args": {"device": 0, "stream": 7, "bytes": 1 << 20, "correlation": 900 + i}}
        for i in range(20)
    ]  # fmt: skip
    stats = trace_stats(load_trace(_write(tmp_path, "d2d.json", events)))
    assert stats.copies and all(c.kind == "memcpy_d2d" for c in stats.copies)
    assert not any("H2D" in h or "pipelined" in h for h in stats.hints), stats.hints


def test_trace_json_carries_the_reason_for_its_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Nsight Systems export with launches but no GPU activity measured nothing: ``--json``
    exited 1 with no reason in the JSON or on stderr (the text mode said why)."""
    path = nsys_without_gpu_tables(tmp_path / "launches.sqlite")
    code = main(["trace", str(path), "--json"])
    captured = capsys.readouterr()
    said = json.loads(captured.out)["verdict"]
    assert code == 1 and said["exit_code"] == 1 and said["severity"] == "fail"
    assert "no GPU activity tables" in said["evidence"]["missing"]
    assert "nothing measured in launches.sqlite" in captured.err
    good = _write(tmp_path, "eager.json", _eager(50))
    assert main(["trace", str(good), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["verdict"]
    assert said["exit_code"] == 0 and said["evidence"]["count"] == 100
    assert said["word"] == "launch-bound"
