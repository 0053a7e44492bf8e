"""The live TensorRT parser probe (``deploylens support MODEL --target trt-live``, Polygraphy's
``inspect capability``): the installed TensorRT's verdict per node, through the adapter — the
one module that talks to TensorRT. Tests drive it with a recording fake of the module."""

from __future__ import annotations

from typing import Any

from deploylens.core.trt.tensorrt_adapter import CLASSIC, TensorRTAdapter, load_tensorrt


def probe_model(path: str, trt: Any = None, module: str = CLASSIC) -> dict[str, Any]:
    """The installed parser's verdict on the model at ``path``: blocked nodes with findings (and
    the fix for each), plus the parser's partition where the release reports one."""
    from deploylens.core.plugin_api import load_plugins
    from deploylens.core.trt.findings import ParserFinding, explain

    result = TensorRTAdapter(trt if trt is not None else load_tensorrt(module)).probe(path)
    plugins = load_plugins()[0]
    for finding in result["findings"]:
        finding["fix"] = explain(ParserFinding(**finding), plugins)
    return result


def tensorrt_probe_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.request import TensorRTProbeRequest

    request = TensorRTProbeRequest.from_params(params)
    read_model(request.path)  # a missing or corrupt model is said before TensorRT reads it
    ctx.progress(0.2, f"importing {request.module}")
    return probe_model(request.path, module=request.module)


def tensorrt_ops_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``{product, version, ops: {op: has an importer}}`` over every default-domain ONNX op."""
    import onnx

    from deploylens.core.support.request import TensorRTOpsRequest

    request = TensorRTOpsRequest.from_params(params)
    ctx.progress(0.2, f"importing {request.module}")
    adapter = TensorRTAdapter(load_tensorrt(request.module))
    ops = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})
    return {"product": adapter.product, "version": adapter.version, "ops": adapter.operators(ops)}
