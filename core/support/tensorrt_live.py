"""Live TensorRT parser probe, when TensorRT is importable (Polygraphy's ``inspect capability``).

Written against TensorRT's documented Python API, across versions:
- 10.x: ``OnnxParser.supports_model_v2(bytes)``, ``num_subgraphs``,
  ``is_subgraph_supported(i)``, ``get_subgraph_nodes(i)``;
- 8.x/9.x: ``OnnxParser.supports_model(bytes) -> (bool, [(node indices, supported)])``;
- 11.x (whole-model queries removed): ``OnnxParser.supports_operator(op_type)`` per op.
TensorRT cannot run in this workplace; tests drive this with a recording fake of the module.
"""

from __future__ import annotations

from typing import Any

import onnx


def _major(version: str) -> int:
    try:
        return int(version.split(".")[0])
    except ValueError:
        return 0


def probe_model(model: onnx.ModelProto, trt: Any = None) -> dict[str, Any]:
    """Which nodes the installed TensorRT's ONNX parser accepts, by subgraph."""
    if trt is None:
        import tensorrt as trt
    version = str(getattr(trt, "__version__", "?"))
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    flags = 0
    if _major(version) < 10:  # explicit batch had to be asked for before TensorRT 10
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    data = model.SerializeToString()
    nodes = list(model.graph.node)
    if hasattr(parser, "supports_model_v2"):
        supported = bool(parser.supports_model_v2(data))
        subgraphs = [
            (list(parser.get_subgraph_nodes(i)), bool(parser.is_subgraph_supported(i)))
            for i in range(parser.num_subgraphs)
        ]
        api = "supports_model_v2"
    elif hasattr(parser, "supports_model"):
        supported, raw = parser.supports_model(data)
        subgraphs = [(list(indices), bool(ok)) for indices, ok in raw]
        api = "supports_model"
    else:
        verdicts = {op: bool(parser.supports_operator(op)) for op in {n.op_type for n in nodes}}
        subgraphs = [([i], verdicts[n.op_type]) for i, n in enumerate(nodes)]
        supported = all(verdicts.values())
        api = "supports_operator"
    unsupported = sorted({i for indices, ok in subgraphs if not ok for i in indices})
    return {
        "version": version,
        "api": api,
        "supported": bool(supported),
        "subgraphs": [{"nodes": indices, "supported": ok} for indices, ok in subgraphs],
        "unsupported_nodes": [
            nodes[i].name or f"{nodes[i].op_type}_{i}" for i in unsupported if i < len(nodes)
        ],
    }


def tensorrt_probe_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.request import TensorRTProbeRequest

    request = TensorRTProbeRequest.from_params(params)
    ctx.progress(0.2, "importing TensorRT")
    return probe_model(read_model(request.path))
