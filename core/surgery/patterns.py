"""Built-in pattern rewrites: what exporters decompose and TensorRT would rather see as one node.

Below the opset that has the op, the node is written in the ``trt.plugins`` domain under the
op's own name: measured with TensorRT-RTX 1.7's parser, ``LayerNormalization`` and ``Gelu`` in
that domain at opset 12 import as its native normalization / activation layers (the parser
resolves an op by type), while the model stays valid ONNX (a custom domain may hold any op) and
ONNX Runtime runs it through the built-in ``surgery_nodes`` plugin's reference implementations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from deploylens.core.errors import UserError
from deploylens.core.surgery.gs_io import (
    constant_value,
    export_graph,
    import_graph,
    infer_shapes,
    only_consumers,
    opset_of,
)

PLUGIN_DOMAIN = "trt.plugins"
# TensorRT's modulated deformable convolution plugin (TensorRT OSS modulatedDeformConvPlugin)
TRT_DEFORM = {"op": "ModulatedDeformConv2d", "version": "1", "namespace": ""}


def _consumer(tensor: Any, op: str) -> Any:
    """The single consumer of ``tensor`` when it is an ``op`` node, else None."""
    if len(tensor.outputs) == 1 and tensor.outputs[0].op == op:
        return tensor.outputs[0]
    return None


def _other(node: Any, tensor: Any) -> Any:
    """The input of a binary node that is not ``tensor``."""
    a, b = node.inputs[0], node.inputs[1]
    return b if a is tensor else a if b is tensor else None


def _scalar(tensor: Any) -> float | None:
    value = constant_value(tensor) if tensor is not None else None
    if value is None or value.size != 1:
        return None
    return float(value.reshape(()))


def _axes(node: Any) -> list[int] | None:
    if "axes" in node.attrs:
        return [int(a) for a in node.attrs["axes"]]
    if len(node.inputs) > 1:
        value = constant_value(node.inputs[1])
        return None if value is None else [int(a) for a in value.reshape(-1)]
    return None


def _place(graph: Any, old: list[Any], node: Any) -> None:
    for n in old:
        n.outputs.clear()
        n.inputs.clear()
    graph.nodes.append(node)


# -- LayerNorm -------------------------------------------------------------------------------------
def layernorm(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """ReduceMean → Sub → Pow(2) → ReduceMean → Add(eps) → Sqrt → Div [→ Mul(γ) → Add(β)] →
    LayerNormalization (ai.onnx at opset ≥ 17, else ``trt.plugins``)."""
    import onnx_graphsurgeon as gs

    graph = import_graph(infer_shapes(model))
    opset = opset_of(model)
    domain = None if opset >= 17 else PLUGIN_DOMAIN
    matched: list[list[str]] = []
    for mean in [n for n in graph.nodes if n.op == "ReduceMean"]:
        if not mean.outputs or not mean.inputs:
            continue  # already consumed by an earlier match
        x = mean.inputs[0]
        subs = [c for c in mean.outputs[0].outputs if c.op == "Sub" and c.inputs[0] is x]
        if len(subs) != 1 or len(mean.outputs[0].outputs) != 1:
            continue
        sub = subs[0]
        d = sub.outputs[0]
        pows = [c for c in d.outputs if c.op == "Pow" and _scalar(c.inputs[1]) == 2.0]
        divs = [c for c in d.outputs if c.op == "Div" and c.inputs[0] is d]
        if len(pows) != 1 or len(divs) != 1 or len(d.outputs) != 2:
            continue
        pow_, div = pows[0], divs[0]
        var = _consumer(pow_.outputs[0], "ReduceMean")
        add_eps = var and _consumer(var.outputs[0], "Add")
        eps = add_eps and _scalar(_other(add_eps, var.outputs[0]))
        sqrt = add_eps and _consumer(add_eps.outputs[0], "Sqrt")
        if not (var and add_eps and eps is not None and sqrt and div.inputs[1] is sqrt.outputs[0]):
            continue
        axes, axes2 = _axes(mean), _axes(var)
        rank = len(x.shape) if x.shape is not None else None
        if axes is None or axes != axes2 or not mean.attrs.get("keepdims", 1):
            continue
        if rank is not None:
            axes = sorted(a % rank for a in axes)
            if axes != list(range(rank - len(axes), rank)):
                continue  # LayerNormalization normalizes trailing axes only
            axis = axes[0] - rank
        elif all(a < 0 for a in axes) and sorted(axes) == list(range(-len(axes), 0)):
            axis = min(axes)
        else:
            continue
        nodes = [mean, sub, pow_, var, add_eps, sqrt, div]
        out, gamma, beta = div.outputs[0], None, None
        mul = _consumer(out, "Mul")
        if mul is not None and constant_value(_other(mul, out)) is not None:
            gamma = constant_value(_other(mul, out))
            nodes.append(mul)
            out = mul.outputs[0]
            add = _consumer(out, "Add")
            if add is not None and constant_value(_other(add, out)) is not None:
                beta = constant_value(_other(add, out))
                nodes.append(add)
                out = add.outputs[0]
        inner = [t for n in nodes[:-1] for t in n.outputs]
        if not all(only_consumers(t, nodes) for t in inner if t is not d) or any(
            t in graph.outputs for t in inner
        ):
            continue
        shape = _normalized_shape(x, axis, gamma, beta)
        if shape is None:
            continue
        dtype = np.float32 if x.dtype is None else np.dtype(x.dtype)
        g = np.broadcast_to(gamma if gamma is not None else 1, shape).astype(dtype)
        b = np.broadcast_to(beta if beta is not None else 0, shape).astype(dtype)
        name = f"{sub.name or 'ln'}_LayerNormalization"
        node = gs.Node(
            "LayerNormalization",
            name=name,
            attrs={"axis": int(axis), "epsilon": float(eps)},
            inputs=[
                x,
                gs.Constant(f"{name}.gamma", np.ascontiguousarray(g)),
                gs.Constant(f"{name}.beta", np.ascontiguousarray(b)),
            ],
            outputs=[out],
            domain=domain,
        )
        matched.append([n.name for n in nodes])
        _place(graph, nodes, node)
    return _finish(graph, model, "layernorm", matched, domain)


def _normalized_shape(x: Any, axis: int, gamma: Any, beta: Any) -> list[int] | None:
    """The trailing shape γ and β must have: from the input's static dims, else from γ/β."""
    if x.shape is not None and all(isinstance(d, int) for d in x.shape[axis:]):
        return [int(d) for d in x.shape[axis:]]
    for value in (gamma, beta):
        if value is not None and value.ndim == -axis:
            return list(value.shape)
    return None


# -- Min + Max → Clip ------------------------------------------------------------------------------
def minmax_clip(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """Max(x, lo) → Min(·, hi) (any lo, hi: that is Clip's definition) and Min(x, hi) →
    Max(·, lo) when lo ≤ hi, with scalar constant bounds, → one Clip."""
    import onnx_graphsurgeon as gs

    graph = import_graph(model)
    opset = opset_of(model)
    matched: list[list[str]] = []
    for first in [n for n in graph.nodes if n.op in ("Max", "Min") and len(n.inputs) == 2]:
        if not first.outputs:
            continue
        x, bound1 = _variable_and_scalar(first)
        second = _consumer(first.outputs[0], "Min" if first.op == "Max" else "Max")
        if (
            x is None
            or second is None
            or len(second.inputs) != 2
            or first.outputs[0] in graph.outputs
        ):
            continue
        bound2 = _scalar(_other(second, first.outputs[0]))
        if bound1 is None or bound2 is None:
            continue
        lo, hi = (bound1, bound2) if first.op == "Max" else (bound2, bound1)
        if first.op == "Min" and lo > hi:
            continue  # max(min(x, hi), lo) is lo everywhere then; Clip would give hi
        dtype = np.dtype(x.dtype) if x.dtype is not None else np.dtype(np.float32)
        name = f"{first.name or 'minmax'}_Clip"
        if opset >= 11:
            node = gs.Node(
                "Clip",
                name=name,
                inputs=[
                    x,
                    gs.Constant(f"{name}.min", np.array(lo, dtype=dtype)),
                    gs.Constant(f"{name}.max", np.array(hi, dtype=dtype)),
                ],
                outputs=[second.outputs[0]],
            )
        else:
            node = gs.Node(
                "Clip",
                name=name,
                attrs={"min": lo, "max": hi},
                inputs=[x],
                outputs=[second.outputs[0]],
            )
        matched.append([first.name, second.name])
        _place(graph, [first, second], node)
    return _finish(graph, model, "minmax_clip", matched, None)


def _variable_and_scalar(node: Any) -> tuple[Any, float | None]:
    a, b = node.inputs
    if _scalar(b) is not None and constant_value(a) is None:
        return a, _scalar(b)
    if _scalar(a) is not None and constant_value(b) is None:
        return b, _scalar(a)
    return None, None


# -- GELU ------------------------------------------------------------------------------------------
def gelu(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """x · 0.5 · (1 + erf(x / √2)) in either multiplication order → Gelu (ai.onnx at opset ≥ 20,
    else ``trt.plugins``)."""
    import onnx_graphsurgeon as gs

    graph = import_graph(model)
    opset = opset_of(model)
    domain = None if opset >= 20 else PLUGIN_DOMAIN
    matched: list[list[str]] = []
    for div in [n for n in graph.nodes if n.op in ("Div", "Mul")]:
        if not div.outputs or len(div.inputs) != 2:
            continue
        x, k = div.inputs[0], _scalar(div.inputs[1])
        want = math.sqrt(2.0) if div.op == "Div" else 1 / math.sqrt(2.0)
        if k is None or not math.isclose(k, want, rel_tol=1e-4):
            continue
        erf = _consumer(div.outputs[0], "Erf")
        add = erf and _consumer(erf.outputs[0], "Add")
        if not (erf and add and _scalar(_other(add, erf.outputs[0])) == 1.0):
            continue
        mul = _consumer(add.outputs[0], "Mul")
        if mul is None:
            continue
        other = _other(mul, add.outputs[0])
        nodes = [div, erf, add, mul]
        if other is x:  # (x * (1 + erf)) * 0.5
            half = _consumer(mul.outputs[0], "Mul")
            if half is None or _scalar(_other(half, mul.outputs[0])) != 0.5:
                continue
            nodes.append(half)
        elif (
            other.inputs
            and other.inputs[0].op == "Mul"
            and x in other.inputs[0].inputs
            and _scalar(_other(other.inputs[0], x)) == 0.5
            and len(other.outputs) == 1
        ):  # (x * 0.5) * (1 + erf)
            nodes.insert(0, other.inputs[0])
        else:
            continue
        inner = [t for n in nodes for t in n.outputs][:-1]
        if any(t in graph.outputs for t in inner) or not all(
            only_consumers(t, nodes) for t in inner
        ):
            continue
        out = nodes[-1].outputs[0]
        name = f"{div.name or 'gelu'}_Gelu"
        node = gs.Node("Gelu", name=name, inputs=[x], outputs=[out], domain=domain)
        matched.append([n.name for n in nodes])
        _place(graph, nodes, node)
    return _finish(graph, model, "gelu", matched, domain)


# -- deform_conv2d ↔ TensorRT's ModulatedDeformConv2d ----------------------------------------------
def deform_to_trt(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """``custom::deform_conv2d`` (DeployLens's export: x, weight, offset, mask, bias; stride_h …)
    → ``trt.plugins::ModulatedDeformConv2d`` (x, offset, mask, weight, bias; stride, padding,
    dilation, group, deformable_group, plugin_version, plugin_namespace) — the name, version and
    namespace TensorRT's parser looks for. Without a mask, a mask of ones (exact) is added, which
    needs the offset's static shape."""
    import onnx_graphsurgeon as gs

    graph = import_graph(infer_shapes(model))
    matched: list[list[str]] = []
    for old in [n for n in graph.nodes if n.op == "deform_conv2d"]:
        _check_deform_signature(old)
        x, weight, offset, mask, bias = old.inputs
        a = old.attrs
        if not a.get("use_mask", 1):
            shape = offset.shape
            if shape is None or not all(isinstance(d, int) for d in shape):
                raise UserError(
                    f"{old.name}: no mask and the offset's shape is not static, so the ones-mask "
                    "TensorRT's plugin needs cannot be made — set the input dims first"
                )
            n, c, h, w = shape
            mask = gs.Constant(f"{old.name}.mask", np.ones((n, c // 2, h, w), np.float32))
        node = gs.Node(
            TRT_DEFORM["op"],
            name=old.name,
            attrs={
                "stride": [int(a["stride_h"]), int(a["stride_w"])],
                "padding": [int(a["pad_h"]), int(a["pad_w"])],
                "dilation": [int(a["dil_h"]), int(a["dil_w"])],
                "group": int(a["n_weight_grps"]),
                "deformable_group": int(a["n_offset_grps"]),
                "plugin_version": TRT_DEFORM["version"],
                "plugin_namespace": TRT_DEFORM["namespace"],
            },
            inputs=[x, offset, mask, weight, bias],
            outputs=list(old.outputs),
            domain=PLUGIN_DOMAIN,
        )
        matched.append([old.name])
        _place(graph, [old], node)
    return _finish(graph, model, "deform_to_trt", matched, PLUGIN_DOMAIN)


DEFORM_ATTRS = ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "n_weight_grps",
                "n_offset_grps")  # fmt: skip


def _check_deform_signature(node: Any) -> None:
    """The pattern rewrites DeployLens's own ``custom::deform_conv2d`` (x, weight, offset, mask,
    bias and its stride/pad/dilation/group attributes); another exporter's node of that name
    is said, not unpacked into a ValueError."""
    missing = [name for name in DEFORM_ATTRS if name not in node.attrs]
    if len(node.inputs) != 5 or missing:
        have = f"{len(node.inputs)} input(s)" + (
            f", no {', '.join(missing)} attribute(s)" if missing else ""
        )
        raise UserError(
            f"{node.name or 'a deform_conv2d node'} is not DeployLens's deform_conv2d export "
            f"(x, weight, offset, mask, bias and its stride/pad/dilation/group attributes): it has "
            f"{have}, so deform_to_trt cannot map it to TensorRT's ModulatedDeformConv2d",
            "Export through DeployLens's deform_conv2d plugin (deploylens export … --plugin "
            "deform_conv2d), or replace the node by hand: surgery's replace step with "
            "new_op = 'ModulatedDeformConv2d' and the inputs in TensorRT's order.",
        )


def deform_from_trt(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """The way back: ``ModulatedDeformConv2d`` → ``custom::deform_conv2d`` (mask kept)."""
    import onnx_graphsurgeon as gs

    graph = import_graph(model)
    matched: list[list[str]] = []
    for old in [n for n in graph.nodes if n.op == TRT_DEFORM["op"]]:
        x, offset, mask, weight, bias = old.inputs
        a = old.attrs
        stride, padding, dilation = (
            list(a.get(k, [1, 1] if k != "padding" else [0, 0]))
            for k in ("stride", "padding", "dilation")
        )
        node = gs.Node(
            "deform_conv2d",
            name=old.name,
            attrs={
                "stride_h": stride[0],
                "stride_w": stride[1],
                "pad_h": padding[0],
                "pad_w": padding[1],
                "dil_h": dilation[0],
                "dil_w": dilation[1],
                "n_weight_grps": int(a.get("group", 1)),
                "n_offset_grps": int(a.get("deformable_group", 1)),
                "use_mask": 1,
            },
            inputs=[x, weight, offset, mask, bias],
            outputs=list(old.outputs),
            domain="custom",
        )
        matched.append([old.name])
        _place(graph, [old], node)
    return _finish(graph, model, "deform_from_trt", matched, "custom")


def _finish(
    graph: Any, model: onnx.ModelProto, pattern: str, matched: list[list[str]], domain: str | None
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    from deploylens.core.surgery.graph_ops import count_change

    result = export_graph(graph, model)
    return result, {
        **count_change(model, result),
        "pattern": pattern,
        "matches": len(matched),
        "matched_nodes": matched,
        "domain": domain or "ai.onnx",
    }


PATTERNS: dict[str, Callable[[onnx.ModelProto], tuple[onnx.ModelProto, dict[str, Any]]]] = {
    "layernorm": layernorm,
    "minmax_clip": minmax_clip,
    "gelu": gelu,
    "deform_to_trt": deform_to_trt,
    "deform_from_trt": deform_from_trt,
}
