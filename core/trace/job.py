"""The ``trace.profile`` worker job: run a model repeatedly under a profiler and write a trace.
It runs in the worker because it runs the user's model (ONNX Runtime sessions, PyTorch modules
from user code with consent, TensorRT engines) — a crash there never takes the GUI down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import input_file

BACKENDS = ("ort", "torch", "trt")


def profile(params: dict[str, Any]) -> dict[str, Any]:
    backend = params.get("backend", "ort")
    model, out = str(params["model"]), str(params["out"])
    iterations = int(params.get("iterations", 20))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if backend == "ort":
        from deploylens.core.trace.capture import capture_ort

        input_file(model, "ONNX model (the ort backend's input)")
        return capture_ort(model, out, iterations)
    if backend == "torch":
        from deploylens.core.export.sources import load_model, parse_spec
        from deploylens.core.trace.capture import capture_torch

        module, inputs, _ = load_model(parse_spec(model))
        import torch

        device = params.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        return capture_torch(
            module, inputs[0], out, iterations, int(params.get("streams", 2)), device
        )
    if backend == "trt":
        from deploylens.core.trace.capture import capture_trt

        return capture_trt(model, out, iterations)
    raise UserError(f"Unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}.")


def profile_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    ctx.progress(0.05, f"profiling {params.get('model')} with {params.get('backend', 'ort')}")
    result = profile(params)
    ctx.progress(1.0, "trace written")
    return result
