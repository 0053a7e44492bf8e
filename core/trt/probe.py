"""The live TensorRT parser probe (``deploylens support MODEL --target trt-live``, Polygraphy's
``inspect capability``): the installed TensorRT's verdict per node, through the adapter — the
one module that talks to TensorRT. Tests drive it with a recording fake of the module."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deploylens.core.support.result import OperatorImporters, ParserProbe
from deploylens.core.trt.plugin_registry import registered_plugins
from deploylens.core.trt.tensorrt_adapter import CLASSIC, TensorRTAdapter, load_tensorrt

if TYPE_CHECKING:
    import onnx


def probe_model(
    path: str,
    trt: Any = None,
    module: str = CLASSIC,
    keep: Callable[[Any], None] | None = None,
    model: onnx.ModelProto | None = None,
) -> ParserProbe:
    """The installed parser's verdict on the model at ``path``: blocked nodes with findings (and
    the fix for each), plus the parser's partition where the release reports one. ``keep``:
    takes the parsed networks instead of freeing them (``JobContext.keep``). ``model``: the
    caller's parse of the same file (it names the nodes; read again when absent)."""
    from deploylens.core import typed
    from deploylens.core.plugin_api import load_plugins
    from deploylens.core.trt.findings import explained

    adapter = TensorRTAdapter(trt if trt is not None else load_tensorrt(module, "parse"))
    probe = typed.from_dict(ParserProbe, adapter.probe(path, keep, model), "the parser's answer")
    registered = registered_plugins(adapter.trt)
    explained(probe.findings, load_plugins()[0], registered, adapter.product)
    return probe


def tensorrt_probe_job(ctx: Any, params: dict[str, Any]) -> ParserProbe:
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.request import TensorRTProbeRequest

    request = TensorRTProbeRequest.from_params(params)
    # a missing or corrupt model is said before TensorRT reads it; the same parse then names
    # the nodes TensorRT reports by index
    model = read_model(request.path)
    ctx.progress(0.2, f"importing {request.module}")
    return probe_model(request.path, module=request.module, keep=ctx.keep, model=model)


def tensorrt_ops_job(ctx: Any, params: dict[str, Any]) -> OperatorImporters:
    """Whether the parser has an importer, for every default-domain ONNX op."""
    import onnx

    from deploylens.core.support.request import TensorRTOpsRequest

    request = TensorRTOpsRequest.from_params(params)
    ctx.progress(0.2, f"importing {request.module}")
    adapter = TensorRTAdapter(load_tensorrt(request.module))
    ops = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})
    return OperatorImporters(
        adapter.product, adapter.version, adapter.operators(ops), registered_plugins(adapter.trt)
    )
