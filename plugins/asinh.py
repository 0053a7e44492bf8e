"""Built-in plugin: aten::asinh → ONNX Asinh (opset 9+) for both exporters."""

from __future__ import annotations

from typing import Any

from deploylens.core.plugin_api import OpPlugin


def _symbolic(g: Any, self: Any) -> Any:
    return g.op("Asinh", self)


def register(opset: int) -> None:
    import torch

    torch.onnx.register_custom_op_symbolic("aten::asinh", _symbolic, opset)


def unregister(opset: int) -> None:
    import torch

    torch.onnx.unregister_custom_op_symbolic("aten::asinh", opset)


def translation() -> dict[Any, Any]:
    import torch
    from onnxscript import FLOAT, script
    from onnxscript import opset18 as op

    @script()
    def asinh(self: FLOAT) -> FLOAT:  # onnxscript needs the return annotation
        return op.Asinh(self)

    return {torch.ops.aten.asinh.default: asinh}


PLUGIN = OpPlugin(
    name="asinh",
    description="torch.asinh as ONNX Asinh (exists since opset 9); TensorRT parses it natively.",
    torch_ops=["aten::asinh"],
    onnx_ops=["Asinh"],
    register_torchscript=register,
    unregister_torchscript=unregister,
    custom_translation=translation,
    min_opset=9,
)
