"""Built-in plugin: ONNX Runtime reference implementations for the nodes graph surgery writes in
the ``trt.plugins`` domain — ``LayerNormalization`` and ``Gelu`` below the opsets that define
them, and TensorRT's ``ModulatedDeformConv2d`` plugin node — so "validate against the original"
runs the edited model. NumPy for the first two (the ONNX definitions), torchvision for the last
(the same reference the deform_conv2d plugin uses, fed in TensorRT's input order)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deploylens.core.plugin_api import ORT_PYOP_DOMAIN, OpPlugin

DOMAIN = "trt.plugins"


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, axis: int, eps: float) -> Any:
    """ONNX LayerNormalization (stash type float32): over the axes from ``axis`` to the last."""
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = np.square(x - mean).mean(axis=axes, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)


def gelu(x: np.ndarray) -> Any:
    """Exact GELU: x · Φ(x) with the error function (ONNX Gelu, approximate="none")."""
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1.0 + erf(x.astype(np.float64) / math.sqrt(2.0)))).astype(x.dtype)


def register_reference() -> None:
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    f32 = PyCustomOpDef.dt_float

    @onnx_op(
        op_type="LayerNormalization",
        domain=ORT_PYOP_DOMAIN,
        inputs=[f32] * 3,
        outputs=[f32],
        attrs={"axis": PyCustomOpDef.dt_int64, "epsilon": f32},
    )
    def _layer_norm(x: Any, gamma: Any, beta: Any, **attrs: Any) -> Any:
        return layer_norm(x, gamma, beta, int(attrs.get("axis", -1)), attrs.get("epsilon", 1e-5))

    @onnx_op(op_type="Gelu", domain=ORT_PYOP_DOMAIN, inputs=[f32], outputs=[f32])
    def _gelu(x: Any) -> Any:
        return gelu(x)

    ints = {
        f"{name}_{i}": PyCustomOpDef.dt_int64
        for name in ("stride", "padding", "dilation")
        for i in (0, 1)
    }

    @onnx_op(
        op_type="ModulatedDeformConv2d",
        domain=ORT_PYOP_DOMAIN,
        inputs=[f32] * 5,
        outputs=[f32],
        attrs={**ints, "group": PyCustomOpDef.dt_int64, "deformable_group": PyCustomOpDef.dt_int64},
    )
    def _deform(x: Any, offset: Any, mask: Any, weight: Any, bias: Any, **attrs: Any) -> Any:
        import torch
        from torchvision.ops import deform_conv2d

        t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (x, offset, mask, weight, bias)]
        pair = lambda name: (int(attrs[f"{name}_0"]), int(attrs[f"{name}_1"]))  # noqa: E731
        out = deform_conv2d(
            t[0],
            t[1],
            t[3],
            t[4],
            stride=pair("stride"),
            padding=pair("padding"),
            dilation=pair("dilation"),
            mask=t[2],
        )
        return out.numpy()


PLUGIN = OpPlugin(
    name="surgery_nodes",
    description="trt.plugins::LayerNormalization / Gelu / ModulatedDeformConv2d (what graph "
    "surgery writes for TensorRT); ONNX Runtime runs them through reference implementations.",
    torch_ops=[],
    onnx_ops=[
        f"{DOMAIN}::LayerNormalization",
        f"{DOMAIN}::Gelu",
        f"{DOMAIN}::ModulatedDeformConv2d",
    ],
    custom_opsets={DOMAIN: 1},
    register_ort_reference=register_reference,
    ort_domain_rewrite={DOMAIN: ORT_PYOP_DOMAIN},
    tensorrt_plugin={
        "name": "ModulatedDeformConv2d",
        "version": "1",
        "library": "libnvinfer_plugin.so",
    },
    exporters=(),
)
