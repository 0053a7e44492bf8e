"""The ``trace.profile`` worker job: run a model repeatedly under a profiler and write a trace.
It runs in the worker because it runs the user's model (ONNX Runtime sessions, PyTorch modules
from user code with consent, TensorRT engines) — a crash there never takes the GUI down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import input_file
from deploylens.core.trace.request import ProfileRequest


def profile(request: ProfileRequest) -> dict[str, Any]:
    request.check()
    backend, model, out = request.backend, request.model, request.out
    settings = request.capture()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if backend == "ort":
        from deploylens.core.trace.capture import capture_ort

        input_file(model, "ONNX model (the ort backend's input)")
        if request.mode != "serial":
            raise UserError(
                f"--mode {request.mode} needs a CUDA device; the ort backend runs ONNX "
                "Runtime's CPU provider here (onnxruntime-gpu is not installed)."
            )
        return capture_ort(model, out, settings)
    if backend == "torch":
        from deploylens.core.pytorch.source import load_model, parse_spec
        from deploylens.core.trace.capture import capture_torch

        module, inputs, _ = load_model(parse_spec(model))
        import torch

        device = request.device or ("cuda" if torch.cuda.is_available() else "cpu")
        return capture_torch(module, inputs[0], out, settings, device)
    from deploylens.core.trace.capture import capture_trt

    return capture_trt(model, out, request.iterations)


def profile_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    request = ProfileRequest.from_params(params)
    ctx.progress(0.05, f"profiling {request.model} with {request.backend}")
    result = profile(request)
    ctx.progress(1.0, "trace written")
    return result


def sweep_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Every point of the sweep in this worker, progress per point (cancel lands between
    points and inside a capture's progress); skipped and failed points are kept with reasons."""
    from dataclasses import asdict

    from deploylens.core.trace.request import SweepRequest
    from deploylens.core.trace.sweep import points, run_point, write_outputs

    request = SweepRequest.from_params(params)
    base = request.base()
    base.check()
    folder = Path(request.out)
    folder.mkdir(parents=True, exist_ok=True)
    on_cpu = _runs_on_cpu(request)
    rows = points(base, request.batches, request.streams, request.modes, on_cpu)
    runnable = [row for row in rows if row.status == "pending"]
    for number, row in enumerate(runnable):
        ctx.progress(
            number / max(len(runnable), 1), f"point {number + 1}/{len(runnable)}: {row.label}"
        )
        run_point(base, row, folder)
    title = f"{request.model} ({request.backend}{', CPU' if on_cpu else ''})"
    outputs = write_outputs(folder, rows, title)
    ctx.progress(1.0, "sweep written")
    return {
        "points": [asdict(row) for row in rows],
        "outputs": outputs,
        "ran": sum(row.status == "ok" for row in rows),
        "skipped": sum(row.status == "skipped" for row in rows),
        "failed": sum(row.status == "failed" for row in rows),
        "on_cpu": on_cpu,
    }


def _runs_on_cpu(request: Any) -> bool:
    if request.backend == "ort":
        return True  # ONNX Runtime's CPU provider (onnxruntime-gpu is not supported here)
    if request.backend == "trt":
        return False
    if request.device:
        return request.device == "cpu"
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


def lab_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    from deploylens.core.trace.lab import run_lab
    from deploylens.core.trace.request import LabRequest

    request = LabRequest.from_params(params)
    ctx.progress(0.1, f"lab scenario {request.name}")
    return run_lab(request.name, request.out, request.synthetic)
