"""Built-in plugin: the seeds' ``custom_domain::customOp2`` (an autograd.Function whose symbolic
emits it), with an ONNX Runtime reference implementation so the exported model validates."""

from __future__ import annotations

from typing import Any

from deploylens.core.plugin_api import ORT_PYOP_DOMAIN, OpPlugin


def register_reference() -> None:
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(
        op_type="customOp2",
        domain=ORT_PYOP_DOMAIN,
        inputs=[PyCustomOpDef.dt_float],
        outputs=[PyCustomOpDef.dt_float],
        attrs={"alpha": PyCustomOpDef.dt_float},
    )
    def custom_op2(x: Any, **attrs: Any) -> Any:
        import numpy as np

        alpha = float(attrs.get("alpha", 2.0))
        return (alpha * x / (1.0 + np.abs(x))).astype(np.float32)


PLUGIN = OpPlugin(
    name="customOp2",
    description="custom_domain::customOp2 (scaled softsign) emitted by an autograd.Function "
    "symbolic; ONNX Runtime runs it through a reference PyOp.",
    torch_ops=[],
    onnx_ops=["custom_domain::customOp2"],
    custom_opsets={"custom_domain": 1},
    register_ort_reference=register_reference,
    ort_domain_rewrite={"custom_domain": ORT_PYOP_DOMAIN},
    exporters=("torchscript",),
)
