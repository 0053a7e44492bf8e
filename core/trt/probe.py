"""The live TensorRT parser probe (``deploylens support MODEL --target trt-live``, Polygraphy's
``inspect capability``): the installed TensorRT's verdict per node, through the adapter — the
one module that talks to TensorRT. Tests drive it with a recording fake of the module."""

from __future__ import annotations

from typing import Any

import onnx

from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt


def probe_model(model: onnx.ModelProto, trt: Any = None) -> dict[str, Any]:
    """Which nodes the installed TensorRT's ONNX parser accepts, by subgraph."""
    return TensorRTAdapter(trt if trt is not None else load_tensorrt()).probe(model)


def tensorrt_probe_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.request import TensorRTProbeRequest

    request = TensorRTProbeRequest.from_params(params)
    ctx.progress(0.2, "importing TensorRT")
    return probe_model(read_model(request.path))
