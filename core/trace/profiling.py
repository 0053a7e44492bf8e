"""One capture, whichever the backend: ONNX Runtime, PyTorch (CPU or CUDA) or a TensorRT engine —
what ``deploylens profile`` runs and what every sweep point runs (it lived in the job module,
which the sweep imported while the job imported the sweep)."""

from __future__ import annotations

from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import input_file
from deploylens.core.trace.request import ProfileRequest
from deploylens.core.trace.result import ProfileResult


def profile(request: ProfileRequest, threads: int = 0) -> ProfileResult:
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
        return capture_ort(model, out, settings, threads)
    if backend == "torch":
        from deploylens.core.pytorch.source import load_model, parse_spec
        from deploylens.core.trace.capture import capture_torch

        module, inputs, _ = load_model(parse_spec(model))
        import torch

        device = request.device or ("cuda" if torch.cuda.is_available() else "cpu")
        return capture_torch(module, inputs[0], out, settings, device)
    from deploylens.core.trace.capture import capture_trt

    return capture_trt(model, out, request.iterations)
