"""The ``build.engine`` worker job: check the settings against the installed TensorRT and the
model's inputs, build with progress/cancel, save the engine and its layer information (the same
JSON trtexec ``--exportLayerInfo`` writes), and summarize it for the engine view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploylens.core.files import atomic_write_text
from deploylens.core.trt.settings import BuildSettings, assert_buildable


def model_inputs(model: str) -> dict[str, list[Any]]:
    """``{input: dims}`` with ints for fixed dims and names for symbolic ones (weights stay on
    disk; initializers listed as inputs are not inputs)."""
    from deploylens.core.model.loading import read_model
    from deploylens.core.model.summary import describe_type

    graph = read_model(model).graph
    initializers = {i.name for i in graph.initializer}
    return {
        v.name: describe_type(v.type)[2] or [] for v in graph.input if v.name not in initializers
    }


def calibration_batches(inputs: dict[str, list[Any]], settings: BuildSettings) -> tuple[Any, int]:
    from deploylens.core.data.preprocess import batch_size, batches, parse_preprocess

    calibration = settings.calibration
    assert calibration is not None
    if not calibration.data:
        return None, calibration.batch_size or 1
    listed = list(inputs.items())
    size = batch_size(listed[0][1], calibration.batch_size)
    spec = parse_preprocess(calibration.preprocess) if calibration.preprocess else None
    return batches(calibration.data, listed, size, spec, limit=calibration.batches), size


def build_engine(
    params: dict[str, Any], progress: Any, cancelled: Any, trt: Any = None, device: Any = None
) -> dict[str, Any]:
    from deploylens.core.engine.layers import parse_layer_info
    from deploylens.core.trt.request import BuildRequest
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt

    request = BuildRequest.from_params(params)
    model, engine_path, settings = request.model, request.engine_path, request.settings
    trt = trt or load_tensorrt()
    adapter = TensorRTAdapter(trt, progress, cancelled)
    inputs = model_inputs(model)
    assert_buildable(settings, adapter.version, inputs)
    calibrator = None
    if settings.calibration is not None and adapter.family != "11":
        from deploylens.core.trt.trt_calibrator import make_calibrator

        if device is None and settings.calibration.data:
            from deploylens.core.trt.device import TorchDevice

            device = TorchDevice()
        data, size = calibration_batches(inputs, settings)
        calibrator = make_calibrator(
            trt, settings.calibration.method, data, size, settings.calibration.cache, device
        )
    report = adapter.build(model, settings, engine_path, calibrator)
    progress(0.95, "inspecting the engine")
    layers_path = str(Path(engine_path).with_suffix("")) + ".layers.json"
    try:
        engine = adapter.deserialize(Path(engine_path).read_bytes())
        text = adapter.inspect(engine)
        atomic_write_text(layers_path, text)
        info = parse_layer_info(json.loads(text), Path(layers_path).name)
        layers = len(info.layers)
    except Exception as exc:
        adapter.log.append(("warning", f"could not inspect the engine: {exc}"))
        layers_path, layers = "", 0
    return {
        "engine": engine_path,
        "engine_bytes": report.engine_bytes,
        "seconds": report.seconds,
        "tensorrt": report.version,
        "layers_json": layers_path,
        "layers": layers,
        "phases": report.phases,
        "log": [f"[{level}] {message}" for level, message in report.log[-200:]],
    }


def build_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    from deploylens.core.trt.tensorrt_adapter import BuildCancelled

    try:
        return build_engine(params, ctx.progress, lambda: ctx.cancelled)
    except BuildCancelled:
        ctx.check_cancelled()  # the worker's own Cancelled: reported as "cancelled"
        raise
