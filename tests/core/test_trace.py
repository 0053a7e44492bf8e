"""Traces: streaming import of real Kineto/Chrome traces (gzipped or not) and Nsight Systems
SQLite exports of two schema generations, exact statistics on a hand-made trace, real ONNX
Runtime and PyTorch CPU captures, clear errors for bad files; a GPU capture where CUDA exists."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.cli import main
from deploylens.core.errors import UserError
from deploylens.core.trace import stats
from deploylens.core.trace.capture import CaptureSettings, capture_ort, capture_torch
from deploylens.core.trace.chrome_file import load_chrome
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.model import COPY_KINDS, KIND, Lane, Trace, TraceBuilder
from deploylens.core.trace.stats import kernel_table, overlap, trace_stats


def kineto_files(artifacts: Path) -> list[Path]:
    return sorted(
        p for p in artifacts.rglob("*.json*") if "trace" in p.name and p.suffix in (".gz", ".json")
    )


def test_every_kineto_trace_imports_with_gpu_lanes_and_exact_times(artifacts: Path) -> None:
    files = kineto_files(artifacts)
    assert len(files) >= 10
    for path in files:
        trace = load_trace(path)
        assert len(trace) > 0, path
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            data = json.load(handle)
        events = data["traceEvents"] if isinstance(data, dict) else data
        complete = [e for e in events if e.get("ph") == "X"]
        assert len(trace) <= len(complete)
        kernels = [e for e in complete if str(e.get("cat", "")).lower() == "kernel"]
        assert int((trace.kind == KIND["kernel"]).sum()) == len(kernels), path
        if kernels:  # nanosecond-exact against the file's decimal microseconds
            first = min(kernels, key=lambda e: float(e["ts"]))
            index = int(
                np.flatnonzero(trace.kind == KIND["kernel"])[
                    np.argmin(trace.start[trace.kind == KIND["kernel"]])
                ]
            )
            assert trace.event(index).name == first["name"]
            assert abs(trace.start[index] - round(float(first["ts"]) * 1000)) < 300
        # statistics hold on every real trace (HTA's annotated trace has instant copies, which
        # once drove the busy-stream count below zero)
        ovl = trace_stats(trace).overlap
        assert ovl.idle_ns >= 0 and min(ovl.concurrency_ns, default=1) >= 1, path


def test_copy_directions_memory_kinds_and_kernel_details(artifacts: Path) -> None:
    path = next(p for p in kineto_files(artifacts) if "simple_add/input" in str(p))
    trace = load_chrome(path)
    copies = np.flatnonzero(trace.kind == KIND["memcpy_h2d"])
    event = trace.event(int(copies[0]))
    assert (
        event.detail == "Pageable → Device" and event.bytes > 0 and event.lane.startswith("GPU 0")
    )
    kernel = trace.event(int(np.flatnonzero(trace.kind == KIND["kernel"])[0]))
    assert kernel.detail.startswith("grid (") and kernel.correlation > 0
    api = np.flatnonzero((trace.kind == KIND["cuda_api"]) & (trace.corr == kernel.correlation))
    assert api.size == 1  # the launch that queued it: the flow arrow's other end


def test_nsys_exports_of_two_schema_generations(artifacts: Path) -> None:
    old = load_trace(next(artifacts.rglob("saxpy-mpi-cuda_nsys_perlmutter0.sqlite")))
    new = load_trace(next(artifacts.rglob("perlmutter-cloverleaf-cuda.sqlite")))
    assert old.meta["version"].startswith("2022.2") and new.meta["version"].startswith("2024.5")
    assert {old.names[i] for i in old.name[old.kind == KIND["kernel"]]} == {"saxpy"}
    assert (old.kind == KIND["nvtx"]).sum() > 0 and (new.kind == KIND["kernel"]).sum() == 1312
    stats = trace_stats(new)
    assert stats.kernels[0].name == "par_ranged2d_kernel" and stats.kernels[0].count == 331
    assert sum(r.gpu_percent for r in stats.kernels) == pytest.approx(100.0)
    assert any("pageable" in h for h in stats.hints)
    assert {c.memory for c in stats.copies} == {"Pageable → Device", "Device → Pageable"}


def test_statistics_on_a_trace_with_known_answers() -> None:
    builder = TraceBuilder()
    s0 = builder.lane(Lane("GPU 0", "stream 1", 0, 1))
    s1 = builder.lane(Lane("GPU 0", "stream 2", 0, 2))
    builder.add(0, 100, s0, KIND["kernel"], "gemm")
    builder.add(150, 50, s0, KIND["kernel"], "gemm")
    builder.add(
        50, 100, s1, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=1000, detail="Pinned → Device"
    )
    builder.add(300, 10, s1, KIND["kernel"], "relu")
    trace = builder.finish()
    ovl = overlap(trace)
    assert ovl.copy_ns == 100 and ovl.hidden_ns == 50 and ovl.hidden_percent == 50.0
    assert ovl.concurrency_ns == {1: 160, 2: 50} and ovl.idle_ns == 100
    # one table of shares for the Timeline and the CLI: of the whole GPU span, idle included
    labels, shares = zip(*ovl.busy_shares(), strict=True)
    assert labels == ("1 busy", "2 busy", "idle")
    assert shares == pytest.approx([100 * 160 / 310, 100 * 50 / 310, 100 * 100 / 310])
    table = {r.name: r for r in kernel_table(trace)}
    assert table["gemm"].count == 2 and table["gemm"].total_us == pytest.approx(0.15)
    assert table["gemm"].gpu_percent == pytest.approx(150 / 160 * 100)


def test_statistics_sweeps_and_kernel_table_against_brute_force() -> None:
    """The block sweeps (blocks of 16 edges here) and the packed (name, duration) sort agree
    with per-nanosecond counting and plain sorting on random overlapping work — including a
    kernel too long for the packed key."""
    rng = np.random.default_rng(11)
    kinds = [KIND["kernel"], KIND["kernel"], KIND["memcpy_h2d"], KIND["memcpy_d2h"]]
    events = []
    for _ in range(400):
        kind = kinds[int(rng.integers(0, 4))]
        name = f"k{int(rng.integers(0, 5))}" if kind == KIND["kernel"] else "copy"
        events.append(
            (
                int(rng.integers(0, 5000)),
                int(rng.integers(0, 60)),
                int(rng.integers(0, 3)),
                kind,
                name,
            )
        )

    def build(extra: list[tuple[int, int, int, int, str]]) -> Trace:
        builder = TraceBuilder()
        streams = [builder.lane(Lane("GPU 0", f"stream {s}", 0, s)) for s in range(3)]
        for start, dur, stream, kind, name in events + extra:
            builder.add(start, dur, streams[stream], kind, name)
        return builder.finish()

    trace = build([])
    busy = np.zeros((3, 5100), bool)  # per stream, per ns: [t, t + 1) covered
    kernel_on = np.zeros(5100, bool)
    hidden = 0
    for i in range(len(trace)):
        s, e = int(trace.start[i]), int(trace.start[i] + trace.dur[i])
        busy[int(trace.lane[i]), s:e] = True
        kernel_on[s:e] |= trace.kind[i] == KIND["kernel"]
    for i in np.flatnonzero(np.isin(trace.kind, COPY_KINDS)).tolist():
        s, e = int(trace.start[i]), int(trace.start[i] + trace.dur[i])
        hidden += int(kernel_on[s:e].sum())
    first, last = int(trace.start.min()), int((trace.start + trace.dur).max())
    level = busy.sum(axis=0)[first:last]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stats, "SWEEP_BLOCK", 16)
        ovl = overlap(trace)
    assert ovl.hidden_ns == hidden
    assert ovl.concurrency_ns == {
        k: int((level == k).sum()) for k in range(1, 4) if (level == k).any()
    }
    assert ovl.idle_ns == int((level == 0).sum())
    runs = np.flatnonzero(np.diff(np.concatenate([[0], level == 0, [0]]).astype(int)))
    longest = max(int(b - a) for a, b in zip(runs[::2], runs[1::2], strict=True))
    assert ovl.gaps[0].gap_us * 1e3 == longest

    long = build([(0, 1 << 41, 0, KIND["kernel"], "k0")])  # 37 min: no packed key, no int32
    assert trace.dur.dtype == np.int32 and long.dur.dtype == np.int64
    for t in (trace, long):
        table = {r.name: r for r in kernel_table(t)}
        for name, row in table.items():
            ids = [i for i, n in enumerate(t.names) if n == name]
            d = np.sort(t.dur[(t.kind == KIND["kernel"]) & np.isin(t.name, ids)])
            assert row.count == d.size and row.max_us == d[-1] / 1e3 and row.min_us == d[0] / 1e3
            assert row.total_us == pytest.approx(float(d.sum()) / 1e3)
            assert row.mean_us == pytest.approx(float(d.mean()) / 1e3)
            assert row.median_us == pytest.approx(float(np.median(d)) / 1e3)
            assert row.p90_us == pytest.approx(float(np.percentile(d, 90)) / 1e3)
            assert row.p99_us == pytest.approx(float(np.percentile(d, 99)) / 1e3)


def test_kernel_table_of_many_names_equals_numpy_per_name() -> None:
    """The grouped pass (one sort, percentiles for every name at once) against numpy called
    name by name, over 2,000 names with 1 to 40 launches each (groups of one included)."""
    rng = np.random.default_rng(5)
    builder = TraceBuilder()
    lane = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    expected: dict[str, list[int]] = {}
    for i in range(2000):
        name = f"kernel_{i}"
        for _ in range(int(rng.integers(1, 41))):
            dur = int(rng.integers(0, 10_000))
            builder.add(int(rng.integers(0, 10**9)), dur, lane, KIND["kernel"], name)
            expected.setdefault(name, []).append(dur)
    table = kernel_table(builder.finish())
    assert len(table) == 2000
    assert [r.total_us for r in table] == sorted((r.total_us for r in table), reverse=True)
    grand = sum(sum(v) for v in expected.values())
    for row in table:
        d = np.sort(np.array(expected[row.name], dtype=np.float64))
        assert row.count == d.size and (row.min_us, row.max_us) == (d[0] / 1e3, d[-1] / 1e3)
        assert row.total_us == d.sum() / 1e3  # integer nanoseconds: exact
        for got, q in ((row.median_us, 50), (row.p90_us, 90), (row.p99_us, 99)):
            assert got == pytest.approx(np.percentile(d, q) / 1e3, rel=1e-12, abs=1e-12)
        assert row.gpu_percent == pytest.approx(100 * d.sum() / grand)


def test_builder_length_counts_every_kind_of_block() -> None:
    """``len`` (asked by a reader after every block it adds, for progress and partial views)
    counts rows added one by one, as column blocks, and into reserved columns, and a copy
    counts what it holds — kept as a running total, not summed over blocks on every call."""
    builder = TraceBuilder()
    lane = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    builder.add(10, 5, lane, KIND["kernel"], "k")

    def block(n: int, at: int) -> dict[str, np.ndarray]:
        return {
            "start": np.arange(at, at + n, dtype=np.int64), "dur": np.ones(n, np.int64),
            "lane": np.full(n, lane, np.int32), "kind": np.full(n, KIND["kernel"], np.int8),
            "name": np.ones(n, np.int32), "corr": np.full(n, -1, np.int64),
            "nbytes": np.zeros(n, np.int64), "detail": np.zeros(n, np.int32),
        }  # fmt: skip

    for i in range(300):
        builder.add_columns(**block(3, 1000 * i))
    assert len(builder) == 1 + 900
    snapshot = builder.copy()
    assert len(snapshot) == 901
    builder.add_columns(**block(7, 10**6))
    assert (len(builder), len(snapshot)) == (908, 901)
    assert len(snapshot.finish()) == 901 and len(builder.finish()) == 908

    reserved = TraceBuilder()
    reserved.reserve(10)
    reserved.add_columns(**block(4, 0))
    reserved.add_columns(**block(20, 100))  # past the reservation: a block of its own
    copied = reserved.copy()
    assert len(reserved) == len(copied) == 24
    assert len(copied.finish()) == 24


def test_odd_but_readable_chrome_events(tmp_path: Path) -> None:
    """Events the typed decoder refuses (a numeric name, quoted numbers, a phase outside the
    spec) fall back to the loose decoder for their chunk and still import; flows are skipped."""
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
        {"ph": "X", "cat": "cpu_op", "name": 42, "pid": 1, "tid": 2, "ts": "100.5", "dur": "2"},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 101, "dur": 1.25,
         "args": {"device": 0, "stream": 7, "grid": [4, "1", 1]}},
        {"ph": "s", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 2, "ts": 100.6},
        {"ph": "Z", "name": "custom", "pid": 1, "tid": 2, "ts": 1},
    ]  # fmt: skip
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load_trace(path)
    assert len(trace) == 2
    op = trace.event(int(np.flatnonzero(trace.kind == KIND["cpu_op"])[0]))
    assert (op.name, op.start_ns, op.dur_ns, op.lane) == (
        "42",
        100_500,
        2000,
        "process 1 / worker",
    )
    kernel = trace.event(int(np.flatnonzero(trace.kind == KIND["kernel"])[0]))
    assert (kernel.dur_ns, kernel.detail) == (1250, "grid (4, 1, 1) block ()")


def test_bad_files_are_explained(tmp_path: Path) -> None:
    truncated = tmp_path / "t.json"
    truncated.write_text(
        '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": "a"}, {"ph": "X", "ts"'
    )
    with pytest.raises(UserError, match="truncated"):
        load_trace(truncated)
    (tmp_path / "x.json").write_text("hello")
    with pytest.raises(UserError, match="not a JSON trace"):
        load_trace(tmp_path / "x.json")
    (tmp_path / "n.json").write_text('{"other": []}')
    with pytest.raises(UserError, match='no "traceEvents"'):
        load_trace(tmp_path / "n.json")
    (tmp_path / "r.nsys-rep").write_bytes(b"\x00" * 32)
    with pytest.raises(UserError, match="nsys export --type sqlite"):
        load_trace(tmp_path / "r.nsys-rep")


def test_real_onnxruntime_capture_and_cli(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ort.json"
    settings = CaptureSettings(iterations=5)
    summary = capture_ort(str(samples / "small_cnn.dynamo.onnx"), str(out), settings)
    assert summary.latency_ms_median > 0
    # an overhead is a figure ≥ 1×, or it is withheld with a flag saying why
    assert summary.profiler_overhead is None or summary.profiler_overhead >= 1.0
    assert (summary.profiler_overhead is None) == bool(summary.flags)
    trace = load_trace(out)
    assert trace.meta["format"] == "onnxruntime"
    ops = {trace.names[i] for i in trace.detail[trace.kind == KIND["ort_node"]]}
    assert "Conv on CPUExecutionProvider" in ops  # the op type and provider of each timed node
    assert main(["trace", str(out)]) == 0
    assert "ort_node" in capsys.readouterr().out


def test_real_torch_cpu_capture(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    summary = capture_torch(
        module, torch.rand(2, 3, 16, 16), str(tmp_path / "t.json"),
        CaptureSettings(iterations=3, batch=2),
    )  # fmt: skip
    trace = load_trace(summary.trace)
    ops = {trace.names[i] for i in trace.name[trace.kind == KIND["cpu_op"]]}
    assert "aten::conv2d" in ops and (trace.kind == KIND["nvtx"]).sum() == 3  # record_function


def test_numbering_numbers_keys_first_seen_first_after_the_initial_ones() -> None:
    """The per-event id maps of the import: ids in first-seen order, continuing after the
    initial entries, a known key keeping its id, and lookups without use adding nothing."""
    from deploylens.core.trace.model import numbering

    ids = numbering({None: 0})
    assert [ids[k] for k in ["b", "a", "b", None, ("t", 1), "a"]] == [1, 2, 1, 0, 3, 2]
    assert list(ids) == [None, "b", "a", ("t", 1)] and "c" not in ids and ids.get("c") is None
    copy = numbering(ids)  # a snapshot's builder: the same ids, then its own
    assert copy["z"] == 4 and "z" not in ids and ids["y"] == 4


def test_lane_start_order_is_lexsorts_order_sorted_or_not() -> None:
    """finish() takes a radix sort by lane when each lane already runs by start; whatever the
    file's order, the rows come out as the full lexsort puts them (stable on ties)."""
    from deploylens.core.trace.model import lane_start_order

    rng = np.random.default_rng(3)
    lane = rng.integers(0, 6, 5000).astype(np.int32)
    in_order = np.sort(rng.integers(0, 400, 5000))  # by start, lanes interleaved, with ties
    shuffled = rng.integers(0, 400, 5000)
    gaps = lane * 3  # lanes 1, 2, 4, 5, 7, ... hold nothing
    for start, lanes in ((in_order, lane), (shuffled, lane), (in_order, gaps), (shuffled, gaps)):
        order, starts = lane_start_order(start, lanes)
        assert np.array_equal(order, np.lexsort((start, lanes)))
        assert np.array_equal(starts, start[order])
    wide = lane + 40_000  # past what the int16 radix sort holds
    assert np.array_equal(lane_start_order(in_order, wide)[0], np.lexsort((in_order, wide)))
    # sorted within each lane except one pair inside a lane: the radix order must be refused
    one_lane = np.zeros(4, np.int32)
    assert lane_start_order(np.array([1, 3, 2, 4]), one_lane)[0].tolist() == [0, 2, 1, 3]


def test_streams_running_at_once_have_known_answers() -> None:
    """The diagnosis's "ran at once" figures (compute-bound and same-direction H2D hints) on a
    trace built here: Σ each stream's union − the union of all. The union of all is computed
    once and handed in (2026-12-03); handing in another set's union would change these."""
    from deploylens.core.trace.diagnosis import measures

    builder = TraceBuilder()
    a = builder.lane(Lane("GPU 0", "stream 1", 0, 1))
    b = builder.lane(Lane("GPU 0", "stream 2", 0, 2))
    c = builder.lane(Lane("GPU 0", "stream 3", 0, 3))
    for start, dur, lane in ((0, 100, a), (200, 100, a), (50, 200, b)):
        builder.add(start, dur, lane, KIND["kernel"], "gemm")
    builder.add(0, 10, a, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=100)
    builder.add(5, 15, c, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=100)
    m = measures(builder.finish())
    # kernels: stream 1 busy 200, stream 2 busy 200, together [0, 300): 100 ns at once
    assert m["kernel_union_ns"] == 300 and m["kernel_streams"] == 2
    assert m["kernel_concurrent_ns"] == 100
    # copies: [0, 10) and [5, 20) on two streams: 5 ns at once
    assert m["h2d_streams"] == 2 and m["h2d_ns"] == 25 and m["h2d_concurrent_ns"] == 5
    one = TraceBuilder()
    s = one.lane(Lane("GPU 0", "stream 1", 0, 1))
    one.add(0, 10, s, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=100)
    one.add(5, 15, s, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=100)
    one.add(0, 50, s, KIND["kernel"], "gemm")
    single = measures(one.finish())
    assert single["h2d_concurrent_ns"] == 0 and single["kernel_concurrent_ns"] == 0


def test_a_hint_never_contradicts_the_measured_overlap() -> None:
    """'Pageable copies cannot overlap compute' stood beside '80.4 % hidden behind kernels':
    where the trace measured the overlap, the hint says what was measured."""
    from deploylens.core.trace.stats import hints
    from deploylens.core.trace.stats_types import CopyRow, Overlap

    copies = [CopyRow(kind="H2D", memory="Pageable → Device", count=83334, bytes=1 << 30,
                      total_us=5e5, mean_gbps=2.0, median_gbps=2.0)]  # fmt: skip
    overlapped = hints(copies, Overlap(copy_ns=100, hidden_ns=80, hidden_percent=80.4), [])
    [said] = [h for h in overlapped if "pageable" in h]
    assert "80.4% of copy time hidden behind kernels, so they did overlap here" in said
    assert "cannot overlap" not in said and "83,334 copies" in said
    serial = hints(copies, Overlap(copy_ns=100, hidden_ns=3, hidden_percent=3.0), [])
    assert any("cannot overlap compute (this trace: 3.0% of copy time hidden)" in h for h in serial)
    # HTA's trace_diff capture: 37.2 % hidden read "cannot overlap compute" beside it
    part = hints(copies, Overlap(copy_ns=100, hidden_ns=37, hidden_percent=37.2), [])
    [said] = [h for h in part if "pageable" in h]
    assert "37.2% of this trace's copy time is hidden" in said and "cannot overlap" not in said
