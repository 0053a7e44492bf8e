"""Capture harness: run a model repeatedly and record a trace.

- ONNX Runtime on the CPU: its own profiler (per-node ``_kernel_time`` events).
- PyTorch: torch.profiler (Kineto). On a CUDA device the harness does what a deployment loop
  does: N streams, pinned host buffers, H2D → execute → D2H per stream, each stage inside an
  NVTX range (so an external Nsight Systems capture shows the same structure) and a
  ``record_function`` range (so the Kineto trace shows it), with CUDA events per stage.

Headline latency/throughput come from a run *without* the profiler; the profiled run's wall time
is reported next to it as the profiler's overhead.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import time
from pathlib import Path
from typing import Any


def capture_ort(model: str, out: str, iterations: int = 20, threads: int = 0) -> dict[str, Any]:
    import onnxruntime as ort

    from deploylens.core.data.feeds import make_feeds

    def session(profile: bool) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        if profile:
            options.enable_profiling = True
            options.profile_file_prefix = str(Path(out).with_suffix(""))
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    plain = session(False)
    feeds = make_feeds(plain, seed=0)
    plain.run(None, feeds)  # warm-up
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        plain.run(None, feeds)
        times.append(time.perf_counter() - start)
    profiled = session(True)
    profiled.run(None, feeds)
    start = time.perf_counter()
    for _ in range(iterations):
        profiled.run(None, feeds)
    profiled_s = time.perf_counter() - start
    written = profiled.end_profiling()
    shutil.move(written, out)
    return _summary("ort", times, profiled_s, iterations, out, batch=1)


def _summary(
    backend: str,
    times: list[float],
    profiled_s: float,
    iterations: int,
    out: str,
    batch: int,
    **extra: Any,
) -> dict[str, Any]:
    plain_s = sum(times)
    return {
        "backend": backend,
        "iterations": iterations,
        "latency_ms_median": 1e3 * statistics.median(times),
        "latency_ms_p90": 1e3 * sorted(times)[int(0.9 * (len(times) - 1))],
        "throughput_per_s": batch * iterations / plain_s if plain_s else 0.0,
        "profiled_wall_s": profiled_s,
        "profiler_overhead": profiled_s / plain_s if plain_s else None,
        "trace": out,
        **extra,
    }


def _nvtx_range(torch: Any) -> Any:
    try:
        import nvtx  # the `nvtx` package, when installed

        return lambda name: nvtx.annotate(name)
    except ImportError:

        @contextlib.contextmanager
        def scoped(name: str) -> Any:
            torch.cuda.nvtx.range_push(name)
            try:
                yield
            finally:
                torch.cuda.nvtx.range_pop()

        return scoped


def capture_torch(
    module: Any, example: Any, out: str, iterations: int = 20, streams: int = 2, device: str = "cpu"
) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    module = module.eval().to(device)
    if device == "cpu":
        with torch.inference_mode():
            module(example)
            times = []
            for _ in range(iterations):
                start = time.perf_counter()
                module(example)
                times.append(time.perf_counter() - start)
            start = time.perf_counter()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(iterations):
                    with record_function("execute"):
                        module(example)
            profiled_s = time.perf_counter() - start
        prof.export_chrome_trace(out)
        return _summary(
            "torch-cpu", times, profiled_s, iterations, out, batch=int(example.shape[0])
        )
    nvtx_range = _nvtx_range(torch)
    cuda_streams = [torch.cuda.Stream() for _ in range(streams)]
    host_in = [example.clone().pin_memory() for _ in range(streams)]
    dev_in = [torch.empty_like(example, device=device) for _ in range(streams)]
    with torch.inference_mode():
        out_shape = module(dev_in[0]).shape
    host_out = [torch.empty(out_shape, pin_memory=True) for _ in range(streams)]
    stages: dict[str, list[float]] = {"h2d": [], "execute": [], "d2h": []}

    def one(i: int, record: bool) -> None:
        """H2D → execute → D2H for batch ``i`` on stream ``i % streams``, each stage timed by a
        CUDA event and named by an NVTX range (and a profiler range when ``record``)."""
        k = i % streams
        s = cuda_streams[k]
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

        def stage(name: str) -> Any:
            ranges = contextlib.ExitStack()
            ranges.enter_context(nvtx_range(f"{name} {i} stream {k}"))
            if record:
                ranges.enter_context(record_function(name))
            return ranges

        with torch.cuda.stream(s), torch.inference_mode():
            events[0].record(s)
            with stage("h2d"):
                dev_in[k].copy_(host_in[k], non_blocking=True)
            events[1].record(s)
            with stage("execute"):
                output = module(dev_in[k])
            events[2].record(s)
            with stage("d2h"):
                host_out[k].copy_(output, non_blocking=True)
            events[3].record(s)
        pending.append(events)

    pending: list[list[Any]] = []
    for i in range(2 * streams):  # warm-up: kernels chosen, allocator primed
        one(i, False)
    torch.cuda.synchronize()
    pending.clear()
    start = time.perf_counter()
    for i in range(iterations):
        one(i, False)
    torch.cuda.synchronize()
    plain_s = time.perf_counter() - start
    for events in pending:
        for name, a, b in (("h2d", 0, 1), ("execute", 1, 2), ("d2h", 2, 3)):
            stages[name].append(events[a].elapsed_time(events[b]))
    pending.clear()
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(iterations):
            one(i, True)
        torch.cuda.synchronize()
    profiled_s = time.perf_counter() - start
    prof.export_chrome_trace(out)
    per_batch = [
        plain_s / iterations
    ] * iterations  # streams overlap: per-batch latency is the stage sum
    result = _summary(
        "torch-cuda",
        per_batch,
        profiled_s,
        iterations,
        out,
        batch=int(example.shape[0]),
        streams=streams,
        device=torch.cuda.get_device_name(),
        stage_ms_median={k: statistics.median(v) for k, v in stages.items() if v},
    )
    result["latency_ms_median"] = sum(result["stage_ms_median"].values())
    return result


def capture_trt(
    engine_path: str,
    out: str,
    iterations: int = 20,
    shapes: dict[str, tuple[int, ...]] | None = None,
    trt: Any = None,
    device: Any = None,
) -> dict[str, Any]:
    """Run a TensorRT engine with an ``IProfiler`` (through the one adapter) and write the
    per-layer times as a trace: one lane, each run's layers end to end. IProfiler reports
    durations, not timestamps, so the layout is marked synthetic; its wall time includes the
    profiler's per-layer synchronization."""
    import numpy as np

    from deploylens.core.trace.export import write_chrome
    from deploylens.core.trace.model import Lane
    from deploylens.core.trace.trtexec import layer_runs_trace
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt

    adapter = TensorRTAdapter(trt if trt is not None else load_tensorrt())
    engine = adapter.deserialize(Path(engine_path).read_bytes())
    if device is None:
        from deploylens.core.trt.device import TorchDevice

        device = TorchDevice()
    feeds = {}
    for i in range(engine.num_io_tensors):
        name = engine.get_tensor_name(i)
        if engine.get_tensor_mode(name) == adapter.trt.TensorIOMode.INPUT:
            shape = (shapes or {}).get(name) or tuple(
                max(int(d), 1) for d in engine.get_tensor_shape(name)
            )
            feeds[name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    start = time.perf_counter()
    _, times = adapter.run(engine, feeds, device, iterations)
    profiled_s = time.perf_counter() - start
    runs = [
        [(layer, values[k]) for layer, values in times.items() if k < len(values)]
        for k in range(iterations)
    ]
    per_run = [sum(ms for _, ms in run) for run in runs]
    trace = layer_runs_trace(
        runs,
        Lane("GPU 0", "TensorRT layers (IProfiler)", 0, 0),
        {
            "format": "tensorrt-iprofiler",
            "synthetic_times": "IProfiler layer durations laid end to end; start times are "
            "not measured",
        },
    )
    write_chrome(trace, out)
    return _summary(
        "tensorrt",
        [ms / 1e3 for ms in per_run],
        profiled_s,
        iterations,
        out,
        batch=1,
        tensorrt=adapter.version,
        note="latency is the sum of IProfiler layer times (TensorRT has no profiler-free "
        "timing here); profiled_wall_s includes the per-layer synchronization",
    )
