"""Compositions that replace an op with ops every backend knows — as text for the fix ladder, as
real ONNX nodes (testable in ONNX Runtime) and as the torch expression the export fix pastes.

The textbook formulas fail in float32 where deployment runs them: ``Log(x + Sqrt(x*x + 1))`` for
asinh is −inf at x = −1e4 (x + √(x²+1) cancels to 0) and inf/NaN once x² overflows (|x| > 1.8e19);
``(Exp(x) − Exp(−x)) / 2`` overflows for x > 88.7 although sinh(89) fits. The forms here scale by
s = max(|x|, 1) and carry the sign separately, so they hold over the whole float32 range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

LN2 = float(np.log(2.0))


@dataclass(frozen=True)
class Composition:
    op: str
    text: str  # for the ladder
    torch: str  # torch lines computing ``x`` → the value of the last line (the export fix)
    nodes: Callable[[str, str], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]] | None = None


def _const(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


def _asinh_nodes(x: str, y: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """sign(x) · (log s + log(a/s + √((a/s)² + (1/s)²))), a = |x|, s = max(a, 1)."""
    n = helper.make_node
    nodes = [
        n("Abs", [x], ["asinh_a"]),
        n("Max", ["asinh_a", "asinh_one"], ["asinh_s"]),
        n("Div", ["asinh_a", "asinh_s"], ["asinh_u"]),
        n("Div", ["asinh_one", "asinh_s"], ["asinh_v"]),
        n("Mul", ["asinh_u", "asinh_u"], ["asinh_u2"]),
        n("Mul", ["asinh_v", "asinh_v"], ["asinh_v2"]),
        n("Add", ["asinh_u2", "asinh_v2"], ["asinh_w"]),
        n("Sqrt", ["asinh_w"], ["asinh_r"]),
        n("Add", ["asinh_u", "asinh_r"], ["asinh_t"]),
        n("Log", ["asinh_t"], ["asinh_lt"]),
        n("Log", ["asinh_s"], ["asinh_ls"]),
        n("Add", ["asinh_ls", "asinh_lt"], ["asinh_m"]),
        n("Sign", [x], ["asinh_sign"]),
        n("Mul", ["asinh_sign", "asinh_m"], [y]),
    ]
    return nodes, [_const("asinh_one", 1.0)]


def _acosh_nodes(x: str, y: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """log x + log(1 + √(1 − (1/x)²)) (x ≥ 1; NaN below, as acosh)."""
    n = helper.make_node
    nodes = [
        n("Div", ["acosh_one", x], ["acosh_v"]),
        n("Mul", ["acosh_v", "acosh_v"], ["acosh_v2"]),
        n("Sub", ["acosh_one", "acosh_v2"], ["acosh_w"]),
        n("Sqrt", ["acosh_w"], ["acosh_r"]),
        n("Add", ["acosh_one", "acosh_r"], ["acosh_t"]),
        n("Log", ["acosh_t"], ["acosh_lt"]),
        n("Log", [x], ["acosh_lx"]),
        n("Add", ["acosh_lx", "acosh_lt"], [y]),
    ]
    return nodes, [_const("acosh_one", 1.0)]


def _hyperbolic_nodes(
    sign: float, prefix: str
) -> Callable[[str, str], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]]:
    """exp(x − ln 2) ± exp(−x − ln 2): sinh/cosh without overflowing before the result does."""

    def build(x: str, y: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
        n = helper.make_node
        p = prefix
        nodes = [
            n("Sub", [x, f"{p}_ln2"], [f"{p}_a"]),
            n("Neg", [x], [f"{p}_nx"]),
            n("Sub", [f"{p}_nx", f"{p}_ln2"], [f"{p}_b"]),
            n("Exp", [f"{p}_a"], [f"{p}_ea"]),
            n("Exp", [f"{p}_b"], [f"{p}_eb"]),
            n("Sub" if sign < 0 else "Add", [f"{p}_ea", f"{p}_eb"], [y]),
        ]
        return nodes, [_const(f"{p}_ln2", LN2)]

    return build


COMPOSITIONS: dict[str, Composition] = {
    c.op: c
    for c in (
        Composition(
            "Asinh",
            "Sign(x) * (Log(s) + Log(a/s + Sqrt((a/s)^2 + (1/s)^2))) with a = Abs(x), "
            "s = Max(a, 1) (overflow- and cancellation-safe over the float32 range)",
            "a = x.abs()\ns = a.clamp(min=1.0)\n"
            "torch.sign(x) * (torch.log(s) + torch.log(a / s + torch.sqrt((a / s) ** 2 + "
            "(1 / s) ** 2)))",
            _asinh_nodes,
        ),
        Composition(
            "Acosh",
            "Log(x) + Log(1 + Sqrt(1 - (1/x)^2)) (x ≥ 1; no overflow of x*x)",
            "torch.log(x) + torch.log(1 + torch.sqrt(1 - (1 / x) ** 2))",
            _acosh_nodes,
        ),
        Composition(
            "Atanh",
            "0.5 * Log((1 + x) / (1 - x))",
            "0.5 * torch.log((1 + x) / (1 - x))",
        ),
        Composition(
            "Sinh",
            "Exp(x - ln2) - Exp(-x - ln2) (no overflow before sinh itself does)",
            "torch.exp(x - 0.6931471805599453) - torch.exp(-x - 0.6931471805599453)",
            _hyperbolic_nodes(-1.0, "sinh"),
        ),
        Composition(
            "Cosh",
            "Exp(x - ln2) + Exp(-x - ln2) (no overflow before cosh itself does)",
            "torch.exp(x - 0.6931471805599453) + torch.exp(-x - 0.6931471805599453)",
            _hyperbolic_nodes(1.0, "cosh"),
        ),
        Composition(
            "LayerNormalization",
            "ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul(scale), Add(bias)",
            "",
        ),
        Composition("Gelu", "0.5 * x * (1 + Erf(x / Sqrt(2)))", ""),
        Composition("HardSwish", "x * HardSigmoid(x, alpha=1/6, beta=0.5)", ""),
        Composition("Mish", "x * Tanh(Softplus(x))", ""),
        Composition("Celu", "Max(0, x) + Min(0, alpha * (Exp(x / alpha) - 1))", ""),
        Composition(
            "GroupNormalization",
            "Reshape to (N, G, -1), InstanceNormalization-style ReduceMean/Var, Reshape back, "
            "Mul(scale), Add(bias)",
            "",
        ),
    )
}
# Ops with no exact composition: the ladder says so and goes to the plugin rung.
NO_COMPOSITION = {
    "GridSample": "no exact composition: use a plugin",
    "DeformConv": "no exact composition (bilinear sampling at learned offsets): use a plugin",
}


def composition_model(op: str, opset: int = 13) -> onnx.ModelProto:
    """A one-input model computing ``op`` through its composition (for ORT and the tests)."""
    composition = COMPOSITIONS[op]
    if composition.nodes is None:
        raise ValueError(f"{op} has no node-level composition")
    nodes, constants = composition.nodes("x", "y")
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n"])
    graph = helper.make_graph(nodes, f"{op.lower()}_composition", [x], [y], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
