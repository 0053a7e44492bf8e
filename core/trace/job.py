"""The ``trace.profile`` worker job: run a model repeatedly under a profiler and write a trace.
It runs in the worker because it runs the user's model (ONNX Runtime sessions, PyTorch modules
from user code with consent, TensorRT engines) — a crash there never takes the GUI down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deploylens.core.files import input_file
from deploylens.core.trace.request import ProfileRequest


def profile(request: ProfileRequest) -> dict[str, Any]:
    backend, model, out, iterations = (
        request.backend,
        request.model,
        request.out,
        request.iterations,
    )
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if backend == "ort":
        from deploylens.core.trace.capture import capture_ort

        input_file(model, "ONNX model (the ort backend's input)")
        return capture_ort(model, out, iterations)
    if backend == "torch":
        from deploylens.core.pytorch.source import load_model, parse_spec
        from deploylens.core.trace.capture import capture_torch

        module, inputs, _ = load_model(parse_spec(model))
        import torch

        device = request.device or ("cuda" if torch.cuda.is_available() else "cpu")
        return capture_torch(module, inputs[0], out, iterations, request.streams, device)
    from deploylens.core.trace.capture import capture_trt

    return capture_trt(model, out, iterations)


def profile_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    request = ProfileRequest.from_params(params)
    ctx.progress(0.05, f"profiling {request.model} with {request.backend}")
    result = profile(request)
    ctx.progress(1.0, "trace written")
    return result
