"""Capture harness: run a model repeatedly and record a trace.

- ONNX Runtime on the CPU: its own profiler (per-node ``_kernel_time`` events).
- PyTorch: torch.profiler (Kineto). On a CUDA device the loop of ``core/trace/pipeline.py``
  issues the batches (serial, pipelined or CUDA-graph replay), each stage inside an NVTX range
  (an external Nsight Systems capture shows the same structure) and a ``record_function``
  range (the Kineto trace shows it).
- TensorRT engines through the adapter's ``IProfiler``.

Headline latency/throughput come from passes *without* the profiler (two, to see whether the
machine was steady); the profiled run's wall time is reported next to it as the profiler's
overhead, unless the figures would mislead (``sanity``). What the capture did is written beside
the trace (``TRACE.capture.json``) so the statistics never recommend what was already done.
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from deploylens.core.trace.capture_sidecar import write_sidecar
from deploylens.core.trace.result import ProfileResult


@dataclass
class CaptureSettings:
    """How a capture runs: the mode batches are issued in, batch size, streams, host memory,
    warm-up and timed iterations (what ``deploylens profile`` and the Profile dialog set)."""

    iterations: int = 20
    mode: str = "serial"
    batch: int = 1
    streams: int = 1
    host: str = "pinned"  # or "pageable"
    warmup: int = 5

    def sidecar(self, backend: str, device: str) -> dict[str, Any]:
        return {"backend": backend, "device": device, **asdict(self)}


UNSTABLE = 1.5  # two halves of one measurement further apart than this: not a figure


def sanity(
    passes: list[list[float]], profiled: list[float], baseline: list[list[float]] | None = None
) -> dict[str, Any]:
    """Figures that would mislead are flagged, not printed. The profiler's overhead is the
    median profiled iteration over the median plain one (timed inside the profiler, never its
    start-up: that made 119× and 299× of two identical runs); it is given only when both
    measurements are stable (the two plain passes — which bracket the profiled one where the
    loop allows — and the two halves of the profiled one, within 1.5×) and above 1×; medians
    of identical passes 10× apart flag the latency too.
    ``baseline``: plain per-iteration times where ``passes`` are not (a GPU pipeline's
    per-batch latencies overlap: its baseline is wall time per iteration)."""
    flags: list[str] = []
    medians = [statistics.median(p) for p in passes if p]
    plain = [statistics.median(p) for p in (baseline or passes) if p]
    overhead: float | None = None
    if profiled and plain and min(plain) > 0:
        half = len(profiled) // 2
        halves = [statistics.median(profiled[:half]), statistics.median(profiled[half:])]
        halves = halves if half else [statistics.median(profiled)]
        spread = max(max(halves) / min(halves), max(plain) / min(plain))
        ratio = statistics.median(profiled) / statistics.mean(plain)  # the bracket's middle
        if ratio < 1.0:
            flags.append(
                f"the profiled iterations were faster than the unprofiled ones ({ratio:.2f}×): "
                "that is noise on a shared machine, not an overhead, so no overhead figure is given"
            )
        elif spread >= UNSTABLE:
            flags.append(
                f"the profiler's overhead is not a stable figure here (repeated measurements "
                f"{spread:.1f}× apart), so none is given"
            )
        else:
            overhead = ratio
    if len(medians) > 1 and min(medians) > 0 and max(medians) / min(medians) >= 10:
        flags.append(
            "identical passes gave medians "
            + " and ".join(f"{1e3 * m:.3f} ms" for m in medians)
            + f" ({max(medians) / min(medians):.0f}× apart): the latency figure is not stable"
        )
    return {
        "profiler_overhead": overhead,
        "flags": flags,
        "pass_medians_ms": [1e3 * m for m in medians],
    }


def capture_ort(
    model: str, out: str, settings: CaptureSettings | None = None, threads: int = 0
) -> ProfileResult:
    import onnxruntime as ort

    from deploylens.core.data.feeds import make_feeds

    settings = settings or CaptureSettings()
    iterations = settings.iterations

    def session(profile: bool) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        if profile:
            options.enable_profiling = True
            options.profile_file_prefix = str(Path(out).with_suffix(""))
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    plain = session(False)
    feeds = batched(make_feeds(plain, seed=0), plain, settings.batch)
    for _ in range(max(settings.warmup, 1)):
        plain.run(None, feeds)
    profiled = session(True)
    profiled.run(None, feeds)

    def timed(run: Any) -> float:
        start = time.perf_counter()
        run(None, feeds)
        return time.perf_counter() - start

    # plain, profiled, plain, one iteration after the other: the two sessions see the same
    # machine, so a load that comes and goes moves both (an overhead of 4.5× beside 1.3× for
    # two identical runs came from measuring them seconds apart on a busy machine)
    passes: list[list[float]] = [[], []]
    profiled_times = []
    for _ in range(iterations):
        passes[0].append(timed(plain.run))
        profiled_times.append(timed(profiled.run))
        passes[1].append(timed(plain.run))
    written = profiled.end_profiling()
    shutil.move(written, out)
    write_sidecar(out, settings.sidecar("ort", "cpu"))
    return _summary("ort", passes, profiled_times, settings, out, notes=cpu_notes(settings))


def batched(feeds: dict[str, Any], session: Any, batch: int) -> dict[str, Any]:
    """The random feeds repeated to ``batch`` along a dynamic first axis; a fixed one is said."""
    if batch == 1:
        return feeds
    import numpy as np

    from deploylens.core.errors import UserError

    result = {}
    for meta in session.get_inputs():
        first = meta.shape[0] if meta.shape else None
        if isinstance(first, int) and first != batch:
            raise UserError(
                f"The model's input '{meta.name}' has a fixed batch of {first}: it cannot run "
                f"batch {batch} (export it with a dynamic batch axis)."
            )
        array = feeds[meta.name]
        result[meta.name] = np.repeat(array[:1], batch, axis=0)
    return result


def cpu_notes(settings: CaptureSettings) -> list[str]:
    """What a CPU capture ignores, said instead of silently dropped."""
    notes = []
    if settings.streams > 1:
        notes.append(f"--streams {settings.streams} is ignored on the CPU (there are no streams)")
    if settings.host != "pinned":
        notes.append("--host-buffers is ignored on the CPU (no host-to-device copies)")
    return notes


def _summary(
    backend: str,
    passes: list[list[float]],
    profiled: list[float],
    settings: CaptureSettings,
    out: str,
    notes: list[str] | None = None,
    wall_s: float | None = None,
    baseline: list[list[float]] | None = None,
    device: str = "",
    gpu_span_ms: float | None = None,
    tensorrt: str = "",
) -> ProfileResult:
    """Headline figures from the unprofiled passes (the last one), the profiled run apart."""
    times = passes[-1]
    plain_s = wall_s if wall_s is not None else sum(times)
    checked = sanity(passes, profiled, baseline)
    median_s = statistics.median(times)
    return ProfileResult(
        backend=backend,
        mode=settings.mode,
        batch=settings.batch,
        streams=settings.streams,
        iterations=settings.iterations,
        latency_ms_median=1e3 * median_s,
        latency_ms_p90=1e3 * sorted(times)[int(0.9 * (len(times) - 1))],
        # one batch after another: what the median latency gives (a GPU pipeline's own clock
        # replaces it where batches overlap)
        throughput_per_s=settings.batch / median_s if median_s else 0.0,
        plain_wall_s=plain_s,
        profiled_wall_s=sum(profiled),
        trace=out,
        notes=notes or [],
        profiler_overhead=checked["profiler_overhead"],
        flags=checked["flags"],
        pass_medians_ms=checked["pass_medians_ms"],
        device=device,
        gpu_span_ms=gpu_span_ms,
        tensorrt=tensorrt,
    )


def capture_torch(
    module: Any, example: Any, out: str, settings: CaptureSettings, device: str = "cpu"
) -> ProfileResult:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from deploylens.core.errors import UserError

    module = module.eval().to(device)
    example = batch_of(example, settings.batch)
    iterations = settings.iterations
    if device == "cpu":
        if settings.mode != "serial":
            raise UserError(
                f"--mode {settings.mode} issues work to CUDA streams: it needs a CUDA device "
                "(none is visible to PyTorch here)."
            )
        with torch.inference_mode():
            for _ in range(max(settings.warmup, 1)):
                module(example)

            def plain_pass() -> list[float]:
                times = []
                for _ in range(iterations):
                    start = time.perf_counter()
                    module(example)
                    times.append(time.perf_counter() - start)
                return times

            # the plain passes bracket the profiled one: a machine that got busier (or
            # quieter) while it ran makes them disagree, and then no overhead is printed
            passes: list[list[float]] = [plain_pass()]
            profiled_times = []
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(iterations):  # timed inside: the profiler's start-up is not it
                    start = time.perf_counter()
                    with record_function("execute"):
                        module(example)
                    profiled_times.append(time.perf_counter() - start)
            passes.append(plain_pass())
        prof.export_chrome_trace(out)
        write_sidecar(out, settings.sidecar("torch", "cpu"))
        return _summary(
            "torch-cpu", passes, profiled_times, settings, out, notes=cpu_notes(settings)
        )
    return capture_torch_cuda(module, example, out, settings, device)


def batch_of(example: Any, batch: int) -> Any:
    """The example input with ``batch`` rows (the first row repeated)."""
    if batch == int(example.shape[0]):
        return example
    return example[:1].expand(batch, *example.shape[1:]).contiguous()


def capture_torch_cuda(
    module: Any, example: Any, out: str, settings: CaptureSettings, device: str
) -> ProfileResult:
    """The GPU loop of ``pipeline`` in ``settings.mode``: headline from two unprofiled passes
    timed by CUDA events around whole batches, then one profiled pass with NVTX and profiler
    ranges per stage (Kineto records kernels and copies on every stream)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from deploylens.core.trace.pipeline import Buffers, Pipeline, TorchCuda, slots_for

    pinned = settings.host == "pinned"
    slots = slots_for(settings.mode, settings.streams)
    with torch.inference_mode():
        probe = module(example.to(device))
    buffers = Buffers(
        host_in=[example.clone().pin_memory() if pinned else example.clone() for _ in range(slots)],
        host_out=[
            torch.empty(probe.shape, dtype=probe.dtype, pin_memory=pinned) for _ in range(slots)
        ],
        dev_in=[torch.empty_like(example, device=device) for _ in range(slots)],
        dev_out=[torch.empty_like(probe) for _ in range(slots)],
    )
    cuda = TorchCuda(torch)
    pipeline = Pipeline(cuda, module, buffers, settings.mode, settings.streams)
    pipeline.run(max(settings.warmup, 1))  # kernels chosen, allocator primed, graph replayed
    cuda.synchronize()
    passes, walls = [], []
    for _ in range(2):
        started = time.perf_counter()
        events = pipeline.run(settings.iterations)
        cuda.synchronize()
        walls.append(time.perf_counter() - started)
        passes.append([ms / 1e3 for ms in events.latencies_ms(cuda)])
        span_ms = cuda.elapsed_ms(events.started[0], events.done[-1])
    profiled = Pipeline(cuda, module, buffers, settings.mode, settings.streams, ranges=True)
    profiled.run(2)
    cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        started = time.perf_counter()  # inside: the profiler's start-up is not its overhead
        profiled.run(settings.iterations)
        cuda.synchronize()
        profiled_s = time.perf_counter() - started
    prof.export_chrome_trace(out)
    capture = settings.sidecar("torch", torch.cuda.get_device_name())
    write_sidecar(out, {**capture, "unprofiled_gpu_span_ms": span_ms})
    per_iteration = [[w / max(settings.iterations, 1)] * settings.iterations for w in walls]
    result = _summary(
        "torch-cuda",
        passes,
        [profiled_s / max(settings.iterations, 1)] * settings.iterations,
        settings,
        out,
        wall_s=walls[-1],
        baseline=per_iteration,
        device=torch.cuda.get_device_name(),
        gpu_span_ms=span_ms,
    )
    # throughput from the device's own clock: first H2D start to last D2H end
    result.throughput_per_s = settings.batch * settings.iterations / (span_ms / 1e3)
    return result


def _runtime_module() -> str:
    """The TensorRT that runs engines here: classic where installed, else TensorRT-RTX."""
    import importlib.util

    from deploylens.core.trt.tensorrt_adapter import CLASSIC, RTX_MODULE

    if importlib.util.find_spec(CLASSIC) is None and importlib.util.find_spec(RTX_MODULE):
        return RTX_MODULE
    return CLASSIC


def capture_trt(
    engine_path: str,
    out: str,
    iterations: int = 20,
    shapes: dict[str, tuple[int, ...]] | None = None,
    trt: Any = None,
    device: Any = None,
) -> ProfileResult:
    """Run a TensorRT engine with an ``IProfiler`` (through the one adapter) and write the
    per-layer times as a trace: one lane, each run's layers end to end. IProfiler reports
    durations, not timestamps, so the layout is marked synthetic; its wall time includes the
    profiler's per-layer synchronization."""
    import numpy as np

    from deploylens.core.errors import UserError
    from deploylens.core.trace.export import write_chrome
    from deploylens.core.trace.model import Lane
    from deploylens.core.trace.trtexec import layer_runs_trace
    from deploylens.core.trt.flags import RTX
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt

    adapter = TensorRTAdapter(trt if trt is not None else load_tensorrt(_runtime_module()))
    if trt is None and adapter.family == RTX:
        from deploylens.core.trt.driver import cuda_driver_present

        if not cuda_driver_present():
            raise UserError(
                f"{Path(engine_path).name} is run with TensorRT-RTX here (classic TensorRT is "
                "not installed), which needs an RTX-class GPU and its driver; this machine has "
                "no CUDA driver (libcuda).",
                "Profile the plan on the GPU it was built for (deploylens profile … --host "
                "user@gpu-machine), or profile the ONNX model here: --backend ort.",
            )
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
    settings = CaptureSettings(iterations=iterations)
    write_sidecar(out, settings.sidecar("tensorrt", "gpu"))
    result = _summary(
        "tensorrt",
        [[ms / 1e3 for ms in per_run]],
        [],  # every run here is profiled: there is no plain run to compare with
        settings,
        out,
        notes=[
            "latency is the sum of IProfiler layer times (TensorRT has no profiler-free timing "
            "here); profiled_wall_s includes the per-layer synchronization"
        ],
        tensorrt=adapter.version,
    )
    result.profiler_overhead = None  # no unprofiled run to compare with: not a figure
    result.profiled_wall_s = profiled_s
    return result
