"""The GPU capture loop's control flow (serial, pipelined, CUDA graph) driven by RecordingCuda —
a RECORDING FAKE of the CUDA runtime (no GPU in CI) that also simulates streams and copy
engines — plus what CI can run for real: the diagnosis of the lab scenarios (synthetic traces),
sweeps on the CPU, the sanity flags and the capture file that keeps hints honest.

The hidden-copy figures here are interval arithmetic on the fake's simulated intervals, not the
tool's statistics; on a GPU, test_capture_gpu.py checks the same on a real trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.trace.capture import sanity
from deploylens.core.trace.pipeline import Pipeline, slots_for
from tests.helpers.fake_cuda import RecordingCuda, buffers


def hidden_fraction(cuda: RecordingCuda) -> float:
    """Share of copy time during which some compute runs (plain interval arithmetic)."""
    computes = cuda.intervals("compute", "replay")
    copies = cuda.intervals("copy_h2d", "copy_d2h")
    hidden = 0.0
    for a, b in copies:
        covered = [(max(a, c), min(b, d)) for c, d in computes if min(b, d) > max(a, c)]
        hidden += sum(d - c for c, d in covered)
    return hidden / sum(b - a for a, b in copies)


def run(mode: str, streams: int, batches: int = 16, **durations: float) -> RecordingCuda:
    cuda = RecordingCuda(**durations)
    pipeline = Pipeline(cuda, lambda x: x, buffers(slots_for(mode, streams)), mode, streams)
    events = pipeline.run(batches)
    assert len(events.started) == len(events.done) == batches
    return cuda


def test_serial_copies_are_never_hidden_and_round_robin_over_streams() -> None:
    cuda = run("serial", 1)
    assert hidden_fraction(cuda) == 0.0  # one stream: H2D → compute → D2H, strictly in order
    two = run("serial", 2)
    streams = [op.stream for op in two.ops if op.kind == "compute"]
    assert streams[:4] == ["compute 0", "compute 1", "compute 0", "compute 1"]
    assert not [op for op in two.ops if op.kind == "wait"]  # a stream orders its own batches


def test_pipelined_issues_the_next_h2d_before_this_compute_and_respects_buffer_reuse() -> None:
    cuda = run("pipelined", 1, batches=8)
    kinds = [(op.kind, op.args) for op in cuda.ops if op.kind in ("copy_h2d", "compute")]
    order = [(k, a.get("dst") or a.get("input")) for k, a in kinds]
    # batch 0's input, then batch 1's input is queued before batch 0 computes
    assert order[:3] == [("copy_h2d", "dev_in0"), ("copy_h2d", "dev_in1"), ("compute", "dev_in0")]
    computes = [i for i, op in enumerate(cuda.ops) if op.kind == "compute"]
    for index in computes:  # each compute waits for its own H2D's event
        assert cuda.ops[index - 1].kind == "wait"
    # an input slot is written again only after a wait on the compute that read it last
    slots = slots_for("pipelined", 1)
    h2d = [i for i, op in enumerate(cuda.ops) if op.kind == "copy_h2d"]
    for batch, index in enumerate(h2d):
        if batch >= slots:
            assert any(
                op.kind == "wait" and op.stream == "h2d" for op in cuda.ops[index - 3 : index]
            )
    # every D2H on its own stream waits for the compute that made its output
    d2h = [i for i, op in enumerate(cuda.ops) if op.kind == "copy_d2h"]
    assert all(cuda.ops[i - 1].kind == "wait" and cuda.ops[i].stream == "d2h" for i in d2h)


def test_pipelining_hides_most_copy_time_where_serial_hides_none() -> None:
    """With compute 2× a copy, a pipelined loop hides the copies behind the other batches'
    compute (all but the first H2D and the last D2H), and runs faster."""
    serial, pipelined = run("serial", 1), run("pipelined", 1)
    assert hidden_fraction(pipelined) > 0.9 > hidden_fraction(serial) == 0.0
    span = lambda cuda: max(e for _, e in cuda.intervals("copy_d2h"))  # noqa: E731
    assert span(pipelined) < 0.6 * span(serial)


def test_cuda_graph_mode_captures_once_and_replays() -> None:
    cuda = run("cudagraph", 4, batches=5)
    assert cuda.graphs == 1
    assert [op.kind for op in cuda.ops].count("replay") == 5
    assert "compute" not in [op.kind for op in cuda.ops]
    assert {op.stream for op in cuda.ops if op.kind == "replay"} == {"compute 0"}


def test_graph_pipelined_replays_each_slots_graph_after_that_slots_copy() -> None:
    """graph-pipelined: one graph per buffer slot (a graph is bound to its buffers), each batch
    replays the graph of the slot its H2D wrote, and the copies run on their own streams as in
    pipelined — so they hide under the replays (the mode an H100 needed: eager resnet18 there is
    launch-bound and a pipelined copy found few kernels to hide under)."""
    cuda = run("graph-pipelined", 2, batches=16)
    slots = slots_for("graph-pipelined", 2)
    assert cuda.graphs == slots == 3
    assert "compute" not in [op.kind for op in cuda.ops]
    written = [op.args["dst"] for op in cuda.ops if op.kind == "copy_h2d"]
    replayed = [op.args["graph"].split(" ")[1].split("->")[0] for op in cuda.ops
                if op.kind == "replay"]  # fmt: skip
    assert written == replayed == [f"dev_in{i % slots}" for i in range(16)]
    assert {op.stream for op in cuda.ops if op.kind == "copy_h2d"} == {"h2d"}
    assert {op.stream for op in cuda.ops if op.kind == "replay"} == {"compute 0", "compute 1"}
    assert hidden_fraction(cuda) > 0.9


@pytest.mark.parametrize("mode", ["serial", "pipelined", "cudagraph", "graph-pipelined"])
def test_only_two_timing_events_a_batch(mode: str) -> None:
    """Headline timing is one event pair around each whole batch, never per stage."""
    cuda = run(mode, 2, batches=6)
    assert len(cuda.timing_events) == 2 * 6


def test_ranges_only_when_asked() -> None:
    cuda = RecordingCuda()
    Pipeline(cuda, lambda x: x, buffers(2), "pipelined", 1, ranges=True).run(3)
    names = [op.args["name"] for op in cuda.ops if op.kind == "range"]
    assert names[:3] == ["h2d 0", "h2d 1", "compute 0"]
    plain = RecordingCuda()
    Pipeline(plain, lambda x: x, buffers(2), "pipelined", 1).run(3)
    assert not [op for op in plain.ops if op.kind == "range"]


# -- sanity flags ---------------------------------------------------------------------------------
def test_an_overhead_below_one_and_unstable_medians_are_flags_not_figures() -> None:
    steady = [[0.010] * 6, [0.011] * 6]
    assert sanity(steady, [0.0176] * 6) == {  # over the mean of the plain passes around it
        "profiler_overhead": pytest.approx(0.0176 / 0.0105),
        "flags": [],
        "pass_medians_ms": [pytest.approx(10.0), pytest.approx(11.0)],
    }
    faster = sanity(steady, [0.009] * 6)
    assert faster["profiler_overhead"] is None and "not an overhead" in faster["flags"][0]
    # the profiled halves 3× apart (a machine busy for half of it): no figure, a flag
    wobbly = sanity(steady, [0.02] * 3 + [0.06] * 3)
    assert wobbly["profiler_overhead"] is None and "not a stable figure" in wobbly["flags"][0]
    unstable = sanity([[0.001] * 5, [0.012] * 5], [0.02] * 5)
    assert any("not stable" in flag and "12× apart" in flag for flag in unstable["flags"])


def test_two_identical_profiles_give_the_same_overhead_or_none(tmp_path: Path) -> None:
    """The overhead is the median profiled iteration over the median plain one, timed inside
    the profiler (its start-up made 299× and 119× of two identical runs): repeated on the same
    model it is either not printed or of the same order; samples/s is batch / median.

    Not "within 1.5×": the profiler's own CPU work costs more wall time the busier the cores
    are, so two runs a few seconds apart on a loaded machine (CI, with the rest of the suite
    beside it) gave 2.88× and 1.12×, each stable within its own run. A figure with the
    start-up in it is 100× and more: this bound still catches that."""
    from tests.core.test_cli import run_cli

    figures = []
    for run in range(2):
        out = tmp_path / f"t{run}.json"
        result = run_cli("profile", "sample:small_cnn", "--backend", "torch", "--iterations",
                         "20", "--batch", "2", "--out", str(out), "--json")  # fmt: skip
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["throughput_per_s"] == pytest.approx(
            2 / (report["latency_ms_median"] / 1e3), rel=1e-6
        )
        figures.append(report["profiler_overhead"])
    stable = [f for f in figures if f is not None]
    assert all(f < 10 for f in stable), figures  # the profiler's start-up is not in it
    if len(stable) == 2:
        assert max(stable) / min(stable) < 5, figures
    text = run_cli("profile", "sample:small_cnn", "--backend", "torch", "--iterations", "5",
                   "--streams", "2", "--out", str(tmp_path / "s.json"))  # fmt: skip
    assert (
        "stream(s)" not in text.stdout.splitlines()[0] and "--streams 2 is ignored" in text.stdout
    )
    stats = run_cli("trace", str(tmp_path / "s.json"), "--stats")  # the tool's own CPU trace
    assert "CPU op (inclusive" in stats.stdout and "aten::" in stats.stdout, stats.stdout


# -- the lab scenarios and the diagnosis ----------------------------------------------------------
@pytest.mark.parametrize("name", ["h2d-bound", "d2h-bound", "compute-bound", "launch-bound"])
def test_the_diagnosis_names_each_lab_scenario(name: str, tmp_path: Path) -> None:
    """On the synthetic lab traces (made up, marked so): each pattern is named, first."""
    from tests.core.test_cli import run_cli

    out = tmp_path / f"{name}.json"
    result = run_cli("lab", name, "--out", str(out), "--synthetic", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["synthetic"] and report["pattern"] == name
    assert json.loads((tmp_path / f"{name}.capture.json").read_text())["lab"] == name
    stats = run_cli("trace", str(out), "--json")
    diagnosis = json.loads(stats.stdout)["diagnosis"]
    assert diagnosis["pattern"] == name and diagnosis["capture"]["lab"] == name


def test_hints_never_recommend_what_the_capture_already_did(tmp_path: Path) -> None:
    from deploylens.core.trace.capture_sidecar import write_sidecar
    from deploylens.core.trace.export import write_chrome
    from deploylens.core.trace.lab import synthetic_trace
    from deploylens.core.trace.load import load_trace
    from deploylens.core.trace.stats import trace_stats

    path = tmp_path / "t.json"
    write_chrome(synthetic_trace("launch-bound"), path)
    plain = trace_stats(load_trace(path))
    assert any("--mode pipelined" in hint for hint in plain.hints)
    assert "CUDA graph" in plain.diagnosis.findings[0].advice
    write_sidecar(path, {"mode": "cudagraph", "streams": 1, "batch": 1})
    graphed = trace_stats(load_trace(path))
    assert graphed.diagnosis.capture["mode"] == "cudagraph"
    advice = graphed.diagnosis.findings[0].advice
    assert "already replays a CUDA graph" in advice and "Replay the compute" not in advice
    write_sidecar(path, {"mode": "pipelined", "streams": 2, "batch": 1})
    pipelined = trace_stats(load_trace(path))
    assert not any(
        "issue H2D for batch i+1" in h or "--mode pipelined" in h for h in pipelined.hints
    )
    assert any("although the capture pipelined" in h for h in pipelined.hints)
    assert "--mode graph-pipelined" in pipelined.diagnosis.findings[0].advice
    write_sidecar(path, {"mode": "graph-pipelined", "streams": 2, "batch": 1})
    both = trace_stats(load_trace(path))
    advice = both.diagnosis.findings[0].advice
    assert "already replays a CUDA graph" in advice and "graph-pipelined" not in advice
    assert any("although the capture pipelined" in h for h in both.hints)


def test_a_sidecar_of_another_shape_is_ignored(tmp_path: Path) -> None:
    from deploylens.core.trace.capture_sidecar import read_sidecar, sidecar_path

    trace = tmp_path / "t.json"
    sidecar_path(trace).write_text('{"mode": 3, "streams": true, "batch": 8, "evil": "x"}')
    assert read_sidecar(trace) == {"batch": 8}
    sidecar_path(trace).write_text('{"unprofiled_gpu_span_ms": 46, "iterations": 2.0}')
    assert read_sidecar(trace) == {"unprofiled_gpu_span_ms": 46}  # an int is a float here
    sidecar_path(trace).write_text('{"unprofiled_gpu_span_ms": "46"}')
    assert read_sidecar(trace) == {}
    sidecar_path(trace).write_text("[1, 2]")
    assert read_sidecar(trace) is None
    sidecar_path(trace).write_text("{not json")
    assert read_sidecar(trace) is None


def test_synthetic_lab_diagnosis_agrees_with_interval_arithmetic() -> None:
    """The H2D-bound figure the diagnosis prints, recomputed from the trace's columns."""
    from deploylens.core.trace.diagnosis import diagnosis
    from deploylens.core.trace.lab import synthetic_trace
    from deploylens.core.trace.model import KIND

    trace = synthetic_trace("h2d-bound")
    gpu = np.isin(trace.kind, [KIND["kernel"], KIND["memcpy_h2d"], KIND["memcpy_d2h"]])
    h2d = float(trace.dur[trace.kind == KIND["memcpy_h2d"]].sum())
    busy = float(trace.dur[gpu].sum())  # one stream, nothing overlaps: the sum is the union
    (finding,) = diagnosis(trace).findings
    assert finding.evidence["copy_share"] == pytest.approx(h2d / busy)


# -- the profile and sweep jobs on the CPU --------------------------------------------------------
def test_cpu_profile_says_what_it_ignores_and_refuses_gpu_modes(
    samples: Path, tmp_path: Path
) -> None:
    from tests.core.test_cli import run_cli

    model = samples / "small_cnn.dynamo.onnx"
    result = run_cli("profile", str(model), "--streams", "3", "--iterations", "4",
                     "--out", str(tmp_path / "t.json"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["notes"] == ["--streams 3 is ignored on the CPU (there are no streams)"]
    assert len(report["pass_medians_ms"]) == 2
    refused = run_cli(
        "profile", str(model), "--mode", "pipelined", "--out", str(tmp_path / "p.json")
    )
    assert refused.returncode == 1 and "needs a CUDA device" in refused.stderr
    bad = run_cli("profile", str(model), "--batch", "0", "--out", str(tmp_path / "b.json"))
    assert bad.returncode == 1 and "--batch must be 1 or more" in bad.stderr
    fixed = run_cli("profile", str(model), "--batch", "4", "--out", str(tmp_path / "f.json"))
    assert fixed.returncode == 1 and "fixed batch of 1" in fixed.stderr


def test_a_cpu_sweep_runs_what_it_can_and_says_why_it_skips_the_rest(
    tmp_path: Path,
) -> None:
    from tests.core.test_cli import run_cli

    out = tmp_path / "sweep"
    result = run_cli("sweep", "sample:small_cnn", "--batch", "1,2", "--streams", "1,2",
                     "--mode", "serial,cudagraph", "--iterations", "3", "--warmup", "1",
                     "--device", "cpu", "--out", str(out), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["ran"], report["skipped"], report["failed"]) == (2, 6, 0)
    ran = [p for p in report["points"] if p["status"] == "ok"]
    assert {p["batch"] for p in ran} == {1, 2} and all(Path(p["trace"]).is_file() for p in ran)
    reasons = {p["reason"] for p in report["points"] if p["status"] == "skipped"}
    assert reasons == {"--mode cudagraph needs a CUDA device", "streams mean nothing on the CPU"}
    csv = (out / "sweep.csv").read_text().splitlines()
    assert csv[0].startswith("mode,streams,batch,status") and len(csv) == 9
    from PIL import Image

    assert Image.open(out / "sweep.png").size == (900, 600)


def test_the_readmes_sweep_on_the_batched_sample_and_sweeps_that_measure_nothing(
    samples: Path, tmp_path: Path
) -> None:
    """The README's sweep on the bundled dynamic-batch sample runs every point the CPU can
    (3 of 27; the fixed-batch samples ran 1) with ONNX Runtime, chosen from the .onnx; an .onnx
    given to the torch backend is refused up front (it skipped all 27 and exited 0), and a sweep
    that measured nothing is INCONCLUSIVE (exit 3), never a success."""
    from tests.core.test_cli import run_cli

    model = str(samples / "small_cnn.batched.onnx")
    grid = ["--batch", "1,8,32", "--streams", "1,2,4", "--mode", "serial,pipelined,cudagraph",
            "--iterations", "3", "--warmup", "1"]  # fmt: skip
    result = run_cli("sweep", model, *grid, "--out", str(tmp_path / "a"), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["ran"], report["skipped"]) == (3, 24) and report["executor"] == "worker"
    assert {p["batch"] for p in report["points"] if p["status"] == "ok"} == {1, 8, 32}
    wrong = run_cli("sweep", model, "--backend", "torch", "--out", str(tmp_path / "b"))
    assert wrong.returncode == 1 and "is an ONNX model" in wrong.stderr
    nothing = run_cli("sweep", model, "--mode", "pipelined", "--out", str(tmp_path / "c"))
    assert nothing.returncode == 3 and "nothing was measured" in nothing.stderr


def test_idle_time_is_judged_without_the_profiler_where_the_capture_timed_it(
    tmp_path: Path,
) -> None:
    """Eager resnet18 at batch 32 on an H200: 33 % idle in its trace, 3 % without the profiler
    — the trace alone called it launch-bound. Here: small kernels with gaps as long as
    themselves (50 % idle in the trace), judged against the capture's unprofiled span."""
    from deploylens.core.trace.capture_sidecar import write_sidecar
    from deploylens.core.trace.export import write_chrome
    from deploylens.core.trace.load import load_trace
    from deploylens.core.trace.model import KIND, Lane, TraceBuilder
    from deploylens.core.trace.stats import trace_stats

    builder = TraceBuilder()
    stream = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    thread = builder.lane(Lane("process 1", "thread 1"))
    for k in range(400):  # 8 µs kernels, 8 µs apart: busy 3.2 ms of a 6.4 ms span
        builder.add(16_000 * k, 5_000, thread, KIND["cuda_api"], "cudaLaunchKernel", k)
        builder.add(16_000 * k + 6_000, 8_000, stream, KIND["kernel"], "small_kernel", k)
    path = tmp_path / "t.json"
    write_chrome(builder.finish(), path)
    base = {"backend": "torch", "mode": "serial", "streams": 1, "batch": 32, "iterations": 20}

    def judged(unprofiled_ms: float | None) -> tuple[str | None, str]:
        extra = {} if unprofiled_ms is None else {"unprofiled_gpu_span_ms": unprofiled_ms}
        write_sidecar(path, {**base, **extra})
        found = trace_stats(load_trace(path)).diagnosis
        return found.pattern, found.findings[0].claim if found.findings else ""

    pattern, claim = judged(None)  # no unprofiled run: the trace's own span
    assert pattern == "launch-bound" and "idle between kernels 50% of its span," in claim
    pattern, claim = judged(3.4)  # busy 3.2 of 3.4 ms without the profiler
    assert pattern == "compute-bound", claim
    assert "busy 94% of its span without the profiler (50% in this trace)" in claim
    # an unprofiled run slower than the trace is noise, and work that cannot fit in it is not
    # the same work: both are judged on the trace's own span
    assert judged(7.0)[0] == "launch-bound" and judged(2.0)[0] == "launch-bound"
