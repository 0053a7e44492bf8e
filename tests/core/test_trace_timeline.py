"""The timeline's core: exact Chrome export that reads back (and follows the Chrome trace event
schema Perfetto accepts), trtexec exports as traces, the index's windows/picks/search/details,
range statistics, ONNX node links and the profile CLI (real ONNX Runtime in the worker)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.cli import main
from deploylens.core.errors import UserError
from deploylens.core.trace.chrome import _ns_text, ns_from_float_us, ns_from_us
from deploylens.core.trace.export import write_chrome
from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.links import event_nodes, events_of_node, node_latency
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.model import KIND, Lane, Trace, TraceBuilder
from deploylens.core.trace.stats import trace_stats
from tests.helpers.synthetic_trace import make_trace, write_nsys_sqlite

PHASES = {"X", "M", "s", "f", "B", "E", "i", "C"}


def check_chrome_schema(data: dict) -> None:
    """The Chrome Trace Event Format as Perfetto's JSON importer reads it."""
    assert isinstance(data["traceEvents"], list)
    assert data.get("displayTimeUnit") in (None, "ms", "ns")
    flows: dict[int, set[str]] = {}
    for event in data["traceEvents"]:
        assert event["ph"] in PHASES
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        if event["ph"] == "M":
            assert event["name"] in {"process_name", "thread_name", "process_sort_index"}
            assert "args" in event
            continue
        assert isinstance(event["ts"], float | int) and event["ts"] >= 0
        if event["ph"] == "X":
            assert isinstance(event["name"], str) and isinstance(event["cat"], str)
            assert isinstance(event["dur"], float | int) and event["dur"] >= 0
            assert isinstance(event.get("args", {}), dict)
        if event["ph"] in "sf":
            flows.setdefault(event["id"], set()).add(event["ph"])
            if event["ph"] == "f":
                assert event["bp"] == "e"
    assert all(phases == {"s", "f"} for phases in flows.values())


def test_exact_decimal_times() -> None:
    tokens = [b"1712867402349370.200", b"1.5", b"0", b"123", b"0.0005", b"-1.25", b"1e3", b"7."]
    assert ns_from_us(tokens).tolist() == [
        1712867402349370200, 1500, 0, 123000, 0, -1250, 1000000, 7000
    ]  # fmt: skip


def test_times_holding_commas_or_quotes_are_measured_not_split() -> None:
    """The tokens are joined with commas and split at them; a token that is not a number (a
    quoted "1,5", a list) must still be measured whole and judged by the text path."""
    assert ns_from_us([b'"12.5"', b"1.5", b'"3"']).tolist() == [12500, 1500, 3000]
    from deploylens.core.trace.model import BadTraceValue

    for odd in ([b'"1,5"', b"2"], [b"2", b"[1,2]", b"3.25"]):
        with pytest.raises(BadTraceValue, match="not a number of microseconds"):
            ns_from_us(odd)


def test_null_and_absent_args_read_as_absent(tmp_path: Path) -> None:
    """Absent correlation/bytes decode to -1/0; a JSON null there, or ``"args": null``, means
    the same (the strict decoder's defaults must not turn null into a crash or a value)."""
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1, "dur": 2,
         "args": {"correlation": None, "bytes": None, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 4, "dur": 2,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 1,
         "tid": 7, "ts": 7, "dur": 1, "args": {"bytes": 4096, "correlation": 5, "device": 0,
                                                "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 2, "tid": 3, "ts": 8, "dur": 1,
         "args": None},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 2, "tid": 3, "ts": 9, "dur": 1},
    ]  # fmt: skip
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load_trace(path)
    columns = (trace.start.tolist(), trace.corr.tolist(), trace.nbytes.tolist())
    rows = sorted(zip(*columns, strict=True))
    assert rows == [(1000, -1, 0), (4000, -1, 0), (7000, 5, 4096), (8000, -1, 0), (9000, -1, 0)]


def test_vectorized_times_agree_with_the_text_path() -> None:
    """Blocks of one layout take the two-step path, mixed blocks the column-by-column one: both
    must equal the exact per-token parse (same lengths with the dot elsewhere, signs, 4+
    decimals, integers, exponents)."""
    rng = np.random.default_rng(7)
    epoch = [
        f"{1712867402349220 + int(i)}.{int(f):03d}".encode()
        for i, f in zip(rng.integers(0, 10**9, 3000), rng.integers(0, 1000, 3000), strict=True)
    ]
    mixed = [b"12.34", b"1.234", b"123.4", b"-0.5", b"0.0005", b"42", b"9.99999", b"2e2"]
    mixed += [
        f"{v:.{d}f}".encode()
        for v, d in zip(
            rng.random(3000) * 10 ** rng.integers(0, 9, 3000), rng.integers(0, 6, 3000), strict=True
        )
    ]
    for tokens in (epoch, mixed, epoch[:5] + mixed):
        assert ns_from_us(tokens).tolist() == [_ns_text(t.decode()) for t in tokens]
    assert ns_from_float_us(np.array([17.963, 0.0005, 1.0, -3.0, 2.5e9])).tolist() == [
        17963, 0, 1000, 0, 2_500_000_000_000
    ]  # fmt: skip


def test_chrome_export_follows_the_schema_and_reads_back_exactly(tmp_path: Path) -> None:
    trace = make_trace(20_000, lanes=16)
    path = write_chrome(trace, tmp_path / "out.json")
    data = json.loads(path.read_text())
    check_chrome_schema(data)
    assert sum(e["ph"] == "s" for e in data["traceEvents"]) > 1000  # API → GPU flows
    back = load_trace(path)
    assert len(back) == len(trace) and len(back.lanes) == len(trace.lanes)
    assert back.start.min() == trace.start.min() and back.dur.sum() == trace.dur.sum()
    for kind in ("kernel", "memcpy_h2d", "memcpy_d2h", "memset", "cuda_api"):
        assert (back.kind == KIND[kind]).sum() == (trace.kind == KIND[kind]).sum(), kind
    assert trace_stats(back).kernels == trace_stats(trace).kernels


def test_chunked_import_across_chunk_boundaries_and_truncation(tmp_path: Path) -> None:
    from deploylens.core.trace import chrome, json_stream

    trace = make_trace(5_000)
    path = write_chrome(trace, tmp_path / "t.json")
    events = []
    for chunk in json_stream.iter_chunks(path, chrome.decode_events, chunk=4096):
        events += chunk
    assert sum(type(e) is chrome._Complete for e in events) == 5_000
    text = path.read_bytes()
    (tmp_path / "cut.json").write_bytes(text[: len(text) // 2])
    with pytest.raises(UserError, match="truncated"):
        load_trace(tmp_path / "cut.json")


def test_row_groups_match_numpy_unique_rows() -> None:
    from deploylens.core.trace.nsys import row_groups

    rng = np.random.default_rng(5)
    cases = [
        rng.integers(0, 4, (5000, 2)),  # (device, stream): packs
        rng.integers(-3, 70000, (5000, 6)),  # grid/block with a negative: packs after shifting
        np.column_stack([rng.integers(0, 2**40, 300), rng.integers(0, 2**40, 300)]),  # too wide
        np.zeros((0, 2), np.int64),
    ]
    for rows in cases:
        unique, inverse = row_groups(rows)
        expected, expected_inverse = np.unique(rows, axis=0, return_inverse=True)
        assert unique.tolist() == expected.tolist()
        assert inverse.tolist() == expected_inverse.reshape(-1).tolist()


def test_nsys_sqlite_of_the_same_trace_gives_the_same_statistics(tmp_path: Path) -> None:
    trace = make_trace(20_000)
    back = load_trace(write_nsys_sqlite(trace, tmp_path / "t.sqlite"))
    assert len(back) == len(trace)
    a, b = trace_stats(trace), trace_stats(back)
    assert a.overlap.hidden_ns == b.overlap.hidden_ns
    assert a.kernels[0].total_us == pytest.approx(b.kernels[0].total_us)


def test_trtexec_times_and_profile_as_traces(artifacts: Path) -> None:
    times = load_trace(next(artifacts.rglob("resnet.onnx.engine.timing.json")))
    assert times.meta["format"] == "trtexec-times"
    compute = times.kind == KIND["kernel"]
    assert compute.sum() == times.meta["inferences"]
    api = (times.kind == KIND["cuda_api"]) & (times.corr == times.corr[compute][0])
    assert api.sum() == 1  # each inference's enqueue is correlated with its compute
    profile = load_trace(next(artifacts.rglob("resnet18_fp16.profile.json")))
    assert profile.meta["synthetic_times"] and profile.meta["format"] == "trtexec-profile"
    latency = node_latency(profile)
    assert "/conv1/Conv" in latency and "/relu/Relu" in latency
    mapped = [i for i in range(len(profile)) if "Reformatting" not in profile.event(i).name]
    assert sum(latency.values()) == pytest.approx(profile.dur[mapped].sum() / 1e6, rel=1e-6)
    hits = events_of_node(profile, "/conv1/Conv")
    assert profile.names[int(profile.name[hits[0]])] == "/conv1/Conv + /relu/Relu"


def test_index_windows_picks_search_and_details() -> None:
    builder = TraceBuilder()
    stream = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    thread = builder.lane(Lane("process 1", "thread 2"))
    nvtx = builder.lane(Lane("process 1", "annotations thread 2"))
    builder.add(0, 1000, nvtx, KIND["nvtx"], "Conv_0 + Relu_1")
    builder.add(100, 50, thread, KIND["cuda_api"], "cudaLaunchKernel", corr=5)
    builder.add(10, 900, thread, KIND["cpu_op"], "aten::conv2d")  # nests the launch: depth 1
    builder.add(300, 200, stream, KIND["kernel"], "implicit_gemm", corr=5, detail="grid (1, 1, 1)")
    builder.add(600, 100, stream, KIND["memcpy_d2h"], "Memcpy DtoH", nbytes=400)
    index = TimelineIndex(builder.finish())
    trace = index.trace
    # the GPU stream comes first and gets a kernels row and a memory row; then the thread (2
    # nested rows) and its annotations
    assert index.rows == 5 and list(index.lane_depth) == [2, 2, 1]
    titles = [index.row_title(r) for r in range(index.rows)]
    assert titles == ["GPU 0 / stream 7 · kernels", "GPU 0 / stream 7 · memory",
                      "process 1 / thread 2", "", "process 1 / annotations thread 2"]  # fmt: skip
    kernel = int(np.flatnonzero(trace.kind == KIND["kernel"])[0])
    copy_event = int(np.flatnonzero(trace.kind == KIND["memcpy_d2h"])[0])
    row = index.row_of(kernel)
    assert (row, index.row_of(copy_event)) == (0, 1)
    assert index.visible(row, 0, 299).size == 0 and index.visible(row, 0, 300).size == 1
    assert index.event_at(1, 550, 60) == copy_event
    details = index.details(kernel)
    assert details.correlated is not None and details.correlated.name == "cudaLaunchKernel"
    assert details.parents == ["Conv_0 + Relu_1", "aten::conv2d"]
    assert event_nodes(index, kernel) == ["Conv_0", "Relu_1"]
    copy = index.details(int(np.flatnonzero(trace.kind == KIND["memcpy_d2h"])[0]))
    assert copy.bandwidth_gbps == pytest.approx(4.0)
    assert index.step("GEMM", -1) == kernel and index.step("gemm", 400) == kernel  # wraps
    assert index.in_range(550, 650).size == 3  # the copy, the NVTX range and the CPU op
    part = trace.take(index.in_range(550, 650), clip=(550, 650))
    assert int(part.dur.max()) == 100


def test_windows_where_nested_ends_fall_back_against_brute_force() -> None:
    """Ranges that share a depth but end out of order (C ends after D, both at depth 2) take
    the running-maximum search; every window must match a brute-force overlap scan."""
    rng = np.random.default_rng(3)
    builder = TraceBuilder()
    thread = builder.lane(Lane("process 1", "thread 1"))
    for s, d in ((0, 200), (10, 10), (15, 85), (25, 15)):  # A, B, C, D of the docstring
        builder.add(s, d, thread, KIND["cpu_op"], "range")
    for s, d in zip(rng.integers(0, 10_000, 3000), rng.integers(1, 800, 3000), strict=True):
        builder.add(int(s), int(d), thread, KIND["cpu_op"], "op")
    index = TimelineIndex(builder.finish())
    trace = index.trace
    assert index._end_max  # the case under test exists
    end = trace.start + trace.dur
    for t0, t1 in [(50, 60), *rng.integers(0, 10_000, (200, 2)).tolist()]:
        t0, t1 = min(t0, t1), max(t0, t1)
        for row in range(index.rows):
            a, b = int(index.row_bounds[row]), int(index.row_bounds[row + 1])
            brute = a + np.flatnonzero((trace.start[a:b] <= t1) & (end[a:b] >= t0))
            assert index.visible(row, t0, t1).tolist() == brute.tolist()
            assert all(index.row_of(int(i)) == row for i in brute)


def test_profile_cli_runs_onnx_runtime_in_the_worker(samples: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "p.json"
    model = samples / "small_cnn.dynamo.onnx"
    assert main(["profile", str(model), "--iterations", "5", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["backend"] == "ort" and len(result["pass_medians_ms"]) == 2
    assert result["profiler_overhead"] is None or result["profiler_overhead"] >= 1.0
    trace = load_trace(out)
    assert trace.meta["format"] == "onnxruntime" and (trace.kind == KIND["ort_node"]).sum() >= 5
    assert "node_mean" in node_latency(trace)  # unfused nodes keep their ONNX names
    assert (
        main(["trace", str(out), "--chrome", str(tmp_path / "c.json"), "--csv", str(tmp_path)]) == 0
    )
    check_chrome_schema(json.loads((tmp_path / "c.json").read_text()))
    assert (tmp_path / "kernels.csv").read_text().startswith("name,count,total_us")
    assert main(["profile", str(model), "--backend", "trt", "--out", str(tmp_path / "t.json")]) == 1
    said = capsys.readouterr().err  # here: TensorRT-RTX installed, no GPU driver, no classic one
    assert "TensorRT-RTX" in said or "pip install tensorrt" in said, said


def test_coverage_grid_matches_the_exact_busy_time_of_each_pixel() -> None:
    """The zoomed-out painter reads busy time from a per-row grid; it must agree with the
    overlap of the row's events with each pixel, computed here the slow, obvious way."""
    trace = make_trace(200_000, lanes=4, seed=3)
    index = TimelineIndex(trace)
    row = max(index.coverage, key=lambda r: int(np.diff(index.row_bounds)[r]))
    coverage = index.coverage[row]
    a, b = int(index.row_bounds[row]), int(index.row_bounds[row + 1])
    events = np.arange(a, b)  # a row is a slice of the trace (the index put it in row order)
    start = trace.start[events].astype(np.float64)
    end = start + np.maximum(trace.dur[events], coverage.step / 4)  # its minimum per event
    t0, t1 = index.span
    for lo, hi, width in ((t0, t1, 800), (t0 + (t1 - t0) // 3, t0 + (t1 - t0) // 2, 300)):
        assert (hi - lo) / width >= 8 * coverage.step  # the regime the painter uses it in
        edges = np.linspace(lo, hi, width + 1)
        exact = np.array(
            [
                np.clip(np.minimum(end, right) - np.maximum(start, left), 0, None).sum()
                / (right - left)
                for left, right in itertools.pairwise(edges)
            ]
        )
        got = coverage.busy(lo, hi, width).sum(axis=0)
        error = np.abs(got - exact)
        assert error.max() < 0.25 and error.mean() < 0.02  # ≤ 1 bin at each pixel edge
        assert np.corrcoef(got, exact)[0, 1] > 0.99


def test_gpu_lanes_come_first_and_statistics_do_not_change() -> None:
    """Lanes renumbered into display order (GPU streams before host threads) are labels only:
    the statistics of the trace are the same before and after the index is built."""

    def build() -> Trace:
        builder = TraceBuilder()
        thread = builder.lane(Lane("process 1", "thread 9"))
        s2 = builder.lane(Lane("GPU 0", "stream 20", 0, 20))
        s1 = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
        for k in range(50):
            builder.add(k * 100, 60, thread, KIND["cuda_api"], "cudaLaunchKernel", corr=k)
            builder.add(k * 100 + 10, 40, s1 if k % 2 else s2, KIND["kernel"], f"k{k % 3}", corr=k)
            builder.add(k * 100 + 55, 30, s1, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=4096)
        return builder.finish()

    before = trace_stats(build())
    index = TimelineIndex(build())
    titles = [index.row_title(r) for r in range(index.rows) if index.row_title(r)]
    assert titles[:3] == ["GPU 0 / stream 7 · kernels", "GPU 0 / stream 7 · memory",
                          "GPU 0 / stream 20"]  # fmt: skip
    assert titles[-1] == "process 1 / thread 9"
    after = trace_stats(index.trace)
    assert after.kernels == before.kernels
    assert after.overlap == before.overlap
    assert sorted(after.streams, key=lambda r: r.lane) == sorted(
        before.streams, key=lambda r: r.lane
    )


def test_a_long_capture_opens_on_the_gpus_work() -> None:
    """A 43 s capture (HTA's alexnet) whose kernels sit in its last 0.1 s opened as 43 s of
    empty lanes. The first view is now the shortest stretch with 3/4 of the GPU's events, even
    with the weights' upload seconds earlier; a trace the GPU fills opens whole."""
    from deploylens.core.trace.index import gpu_window
    from deploylens.core.trace.model import KIND, Lane, TraceBuilder

    builder = TraceBuilder()
    cpu = builder.lane(Lane("process 1", "thread 1"))
    gpu = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    builder.add(0, 40_000_000_000, cpu, KIND["cpu_op"], "python main loop")  # 40 s of CPU
    for k in range(10):  # the weights' upload, 10 s in
        builder.add(10_000_000_000 + k * 1_000_000, 900_000, gpu, KIND["memcpy_h2d"], "HtoD")
    for k in range(90):  # the step: 90 kernels in the last 100 ms
        builder.add(39_900_000_000 + k * 1_000_000, 500_000, gpu, KIND["kernel"], "sgemm")
    window = gpu_window(builder.finish())
    assert window is not None
    first, last = window
    assert 39_890_000_000 <= first <= 39_900_000_000 and 39_989_500_000 <= last < 40_000_000_000
    busy = TraceBuilder()
    lane = busy.lane(Lane("GPU 0", "stream 7", 0, 7))
    for k in range(100):
        busy.add(k * 1_000_000, 900_000, lane, KIND["kernel"], "sgemm")
    assert gpu_window(busy.finish()) is None
