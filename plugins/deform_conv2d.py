"""Built-in plugin: torchvision::deform_conv2d as the seeds' ``custom::deform_conv2d`` op, with an
ONNX Runtime reference implementation (computed with torchvision) and a TensorRT plugin reference.
(For opset 19+, the dynamo exporter's ONNX DeformConv is the no-plugin fix.)"""

from __future__ import annotations

from typing import Any

from deploylens.core.plugin_api import ORT_PYOP_DOMAIN, OpPlugin

ATTRS = (
    "stride_h",
    "stride_w",
    "pad_h",
    "pad_w",
    "dil_h",
    "dil_w",
    "n_weight_grps",
    "n_offset_grps",
)


def _symbolic(g: Any, *args: Any) -> Any:
    from torch.onnx import symbolic_helper

    inputs, rest = args[:5], args[5:]
    ints = [symbolic_helper._maybe_get_const(v, "i") for v in rest[:8]]
    use_mask = int(symbolic_helper._maybe_get_const(rest[8], "b"))
    attrs = {f"{name}_i": int(value) for name, value in zip(ATTRS, ints, strict=True)}
    out = g.op("custom::deform_conv2d", *inputs, use_mask_i=use_mask, **attrs)
    return out.setType(inputs[0].type())


def register(opset: int) -> None:
    import torch

    torch.onnx.register_custom_op_symbolic("torchvision::deform_conv2d", _symbolic, opset)


def unregister(opset: int) -> None:
    import torch

    torch.onnx.unregister_custom_op_symbolic("torchvision::deform_conv2d", opset)


def register_reference() -> None:
    """onnxruntime-extensions PyOp (domain ai.onnx.contrib) that computes with torchvision."""
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(
        op_type="deform_conv2d",
        domain=ORT_PYOP_DOMAIN,
        inputs=[PyCustomOpDef.dt_float] * 5,
        outputs=[PyCustomOpDef.dt_float],
        attrs={
            **{name: PyCustomOpDef.dt_int64 for name in ATTRS},
            "use_mask": PyCustomOpDef.dt_int64,
        },
    )
    def deform_conv2d(x: Any, weight: Any, offset: Any, mask: Any, bias: Any, **attrs: Any) -> Any:
        import torch
        from torchvision.ops import deform_conv2d as reference

        tensors = [torch.from_numpy(a) for a in (x, weight, offset, mask, bias)]
        out = reference(
            tensors[0],
            tensors[2],
            tensors[1],
            tensors[4],
            stride=(attrs["stride_h"], attrs["stride_w"]),
            padding=(attrs["pad_h"], attrs["pad_w"]),
            dilation=(attrs["dil_h"], attrs["dil_w"]),
            mask=tensors[3] if attrs["use_mask"] else None,
        )
        return out.numpy()


PLUGIN = OpPlugin(
    name="deform_conv2d",
    description="torchvision::deform_conv2d as custom::deform_conv2d; ONNX Runtime runs it "
    "through a reference PyOp, TensorRT through its DCNv2-style plugin.",
    torch_ops=["torchvision::deform_conv2d"],
    onnx_ops=["custom::deform_conv2d"],
    register_torchscript=register,
    unregister_torchscript=unregister,
    custom_opsets={"custom": 1},
    register_ort_reference=register_reference,
    ort_domain_rewrite={"custom": ORT_PYOP_DOMAIN},
    tensorrt_plugin={"name": "DeformConv2d", "version": "1", "library": "libdeform_conv2d.so"},
    exporters=("torchscript",),
)
