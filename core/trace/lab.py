"""Lab scenarios: small programs that reproduce the four patterns the diagnosis names — H2D-bound,
D2H-bound, compute-bound, launch-bound — so a user can see each one on the timeline, and the
diagnosis can be checked against a trace whose cause is known.

On a CUDA device each scenario runs real kernels and copies with PyTorch under its profiler.
Without one, ``synthetic_trace`` writes the same structure as a SYNTHETIC trace — made up, not
measured, and marked so in the trace and in its capture file — which is what CI checks the
diagnosis against.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploylens.core.trace.capture_sidecar import write_sidecar
from deploylens.core.trace.model import KIND, Lane, Trace, TraceBuilder
from deploylens.core.trace.result import LabResult

SCENARIOS = {
    "h2d-bound": "a 64 MB input copied to the GPU for one reduction kernel per batch",
    "d2h-bound": "one small input expanded on the GPU into a 64 MB output copied back",
    "compute-bound": "small copies around a chain of 4096×4096 matrix products",
    "launch-bound": "300 tiny element-wise kernels on a 1-element tensor per batch",
}
ITERATIONS = 12

# (kind, duration µs, bytes) per batch; launch-bound adds its kernels in a loop
_SHAPES: dict[str, list[tuple[str, int, int]]] = {
    "h2d-bound": [("memcpy_h2d", 2000, 64 << 20), ("kernel", 150, 0), ("memcpy_d2h", 8, 4)],
    "d2h-bound": [("memcpy_h2d", 8, 4), ("kernel", 150, 0), ("memcpy_d2h", 2000, 64 << 20)],
    "compute-bound": [("memcpy_h2d", 40, 1 << 20)]
    + [("kernel", 450, 0)] * 10
    + [("memcpy_d2h", 20, 1 << 18)],
    "launch-bound": [("memcpy_h2d", 6, 4)] + [("kernel", 3, 0)] * 300 + [("memcpy_d2h", 6, 4)],
}
_LAUNCH_US = {"kernel": 14.0, "memcpy_h2d": 9.0, "memcpy_d2h": 9.0}  # CPU side of each GPU op


def synthetic_trace(name: str) -> Trace:
    """The scenario's structure with made-up durations: one GPU stream, one host thread whose
    launch calls (correlated) queue the work; the GPU starts an op when both the previous op
    and its launch are done — so tiny kernels wait on their launches, as on a real GPU."""
    builder = TraceBuilder()
    stream = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    thread = builder.lane(Lane("process 1", "thread 1"))
    cpu, gpu, corr = 0, 0, 0
    for _ in range(ITERATIONS):
        for kind, us, nbytes in _SHAPES[name]:
            corr += 1
            call = "cudaLaunchKernel" if kind == "kernel" else "cudaMemcpyAsync"
            launch_ns = int(_LAUNCH_US[kind] * 1000)
            builder.add(cpu, launch_ns, thread, KIND["cuda_api"], call, corr)
            cpu += launch_ns + 1000
            start = max(gpu, cpu - 1000) + 1500
            dur = us * 1000
            label = {"kernel": "lab_kernel", "memcpy_h2d": "Memcpy HtoD (Pinned -> Device)",
                     "memcpy_d2h": "Memcpy DtoH (Device -> Pinned)"}[kind]  # fmt: skip
            detail = "Pinned → Device" if kind == "memcpy_h2d" else ""
            detail = "Device → Pinned" if kind == "memcpy_d2h" else detail
            builder.add(start, dur, stream, KIND[kind], label, corr, nbytes, detail)
            gpu = start + dur
        cpu = max(cpu, gpu)  # the batch loop synchronises
    builder.meta.update(format="deploylens-lab", synthetic=True, lab=name)
    return builder.finish()


def _h2d_bound(torch: Any) -> Callable[[], None]:
    host = torch.empty(16 << 20, pin_memory=True)  # 64 MB of float32
    dev = torch.empty_like(host, device="cuda")
    out = torch.empty(1, pin_memory=True)

    def one_batch() -> None:
        dev.copy_(host, non_blocking=True)
        out.copy_(dev.sum().reshape(1), non_blocking=True)

    return one_batch


def _d2h_bound(torch: Any) -> Callable[[], None]:
    host_in = torch.ones(1, pin_memory=True)
    dev_in = torch.empty(1, device="cuda")
    dev_out = torch.empty(16 << 20, device="cuda")
    host_out = torch.empty(16 << 20, pin_memory=True)

    def one_batch() -> None:
        dev_in.copy_(host_in, non_blocking=True)
        dev_out.copy_(dev_in.expand(16 << 20))
        host_out.copy_(dev_out, non_blocking=True)

    return one_batch


def _compute_bound(torch: Any) -> Callable[[], None]:
    host = torch.randn(256, 4096).pin_memory()
    dev = torch.empty_like(host, device="cuda")
    weight = torch.randn(4096, 4096, device="cuda") / 64
    out = torch.empty(256, 4096, pin_memory=True)

    def one_batch() -> None:
        dev.copy_(host, non_blocking=True)
        x = dev
        for _ in range(10):
            x = torch.tanh(x @ weight)
        out.copy_(x, non_blocking=True)

    return one_batch


def _launch_bound(torch: Any) -> Callable[[], None]:
    host = torch.ones(1, pin_memory=True)
    dev = torch.empty(1, device="cuda")
    out = torch.empty(1, pin_memory=True)

    def one_batch() -> None:
        dev.copy_(host, non_blocking=True)
        x = dev
        for _ in range(300):
            x = x + 1
        out.copy_(x, non_blocking=True)

    return one_batch


def _unprofiled_span_ms(torch: Any, batch: Callable[[], None]) -> float:
    """The profiled loop's batches without the profiler, timed by CUDA events on the stream
    they run on: the diagnosis judges idle time against it."""
    first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    first.record()
    for _ in range(ITERATIONS):
        batch()
    last.record()
    torch.cuda.synchronize()
    return float(first.elapsed_time(last))


# One batch of each scenario on the GPU (real kernels and copies).
_PROGRAMS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "h2d-bound": _h2d_bound,
    "d2h-bound": _d2h_bound,
    "compute-bound": _compute_bound,
    "launch-bound": _launch_bound,
}


def run_lab(name: str, out: str, synthetic: bool = False) -> LabResult:
    """Write the scenario's trace (real on a GPU, else synthetic) and its diagnosis."""
    from deploylens.core.errors import UserError
    from deploylens.core.trace.diagnosis import diagnosis
    from deploylens.core.trace.export import write_chrome
    from deploylens.core.trace.load import load_trace

    if name not in SCENARIOS:
        raise UserError(f"No lab scenario '{name}': choose from {', '.join(SCENARIOS)}.")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    device = "none"
    unprofiled: dict[str, float] = {}  # a real run's span without the profiler
    if not synthetic:
        try:
            import torch

            synthetic = not torch.cuda.is_available()
        except ImportError:
            synthetic = True
    if synthetic:
        write_chrome(synthetic_trace(name), out)
    else:
        from torch.profiler import ProfilerActivity, profile, record_function

        batch = _PROGRAMS[name](torch)
        for _ in range(3):
            batch()
        torch.cuda.synchronize()
        unprofiled["unprofiled_gpu_span_ms"] = _unprofiled_span_ms(torch, batch)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(ITERATIONS):
                with record_function(f"lab {name}"):
                    batch()
            torch.cuda.synchronize()
        prof.export_chrome_trace(out)
        device = torch.cuda.get_device_name()
    capture = {"backend": "lab", "lab": name, "device": device, "mode": "serial", "streams": 1,
               "iterations": ITERATIONS}  # fmt: skip
    write_sidecar(out, {**capture, **unprofiled})
    found = diagnosis(load_trace(out))
    return LabResult(name, out, synthetic, device, found.pattern, found.findings)
