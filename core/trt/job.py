"""The ``build.engine`` worker job: check the settings against the installed TensorRT and the
model's inputs, build with progress/cancel, save the engine and its layer information (the same
JSON trtexec ``--exportLayerInfo`` writes), and summarize it for the engine view."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text
from deploylens.core.trt.checks import assert_buildable
from deploylens.core.trt.driver import cuda_driver_present
from deploylens.core.trt.result import BuildResult
from deploylens.core.trt.settings import BuildSettings


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
) -> BuildResult:
    from deploylens.core.engine.layers import parse_layer_info
    from deploylens.core.model.sniff import check_model_file
    from deploylens.core.trt.checks import build_targets
    from deploylens.core.trt.findings import ParseRejected, explained
    from deploylens.core.trt.flags import RTX
    from deploylens.core.trt.request import BuildRequest
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt, module_for

    request = BuildRequest.from_params(params)
    model, engine_path, settings = request.model, request.engine_path, request.settings
    check_model_file(model)  # a folder, FIFO, empty file or checkpoint is said before TensorRT
    trt = trt or load_tensorrt(module_for(request.version))
    adapter = TensorRTAdapter(trt, progress, cancelled)
    rtx = adapter.family == RTX
    installed = f"{RTX}-{adapter.version}" if rtx else adapter.version
    assert_buildable(settings, installed, None)  # what needs no model, before the parse
    notices: list[str] = []  # what the build decided that the user did not ask for

    def prepare(inputs: dict[str, list[Any]]) -> Any:
        """The model as TensorRT read it: profiles checked against its inputs, the calibrator
        fed from them (reading the ONNX file again cost a third of a resnet50 build). Without a
        profile, an input dynamic only in its batch is built for batch 1 and the report says
        so; one dynamic elsewhere (a sequence) is refused with the flag that gives its shapes —
        trtexec's 1 in every dimension made DistilBERT a one-token engine, silently."""
        from deploylens.core.trt.profiles import unprofiled_dynamic

        dynamic = {n: d for n, d in inputs.items() if any(not isinstance(x, int) for x in d)}
        for name in adapter.shape_tensor_inputs:  # their values come from a profile, checked
            dynamic.pop(name, None)
        if dynamic and not settings.profiles:
            from deploylens.core.trt.settings import Profile

            beyond = unprofiled_dynamic(dynamic)
            if beyond:
                example = " ".join(
                    f"--profile '{n}:{_shape(d, 1)}/{_shape(d, 8)}/{_shape(d, 64)}'"
                    for n, d in beyond.items()
                )
                raise UserError(
                    f"{Path(model).name} has inputs with dynamic dimensions beyond the batch ("
                    + ", ".join(f"{n} {d}" for n, d in beyond.items())
                    + "): TensorRT needs their range, or it builds an engine for 1 in each "
                    "(a one-token engine).",
                    f"Give an optimization profile: {example} (or [[profiles]] in --settings).",
                )
            fixed = {n: [x if isinstance(x, int) else 1 for x in d] for n, d in dynamic.items()}
            settings.profiles = [Profile({n: (s, s, s) for n, s in fixed.items()})]
            notices.append(
                "no optimization profile: the dynamic batch of "
                + ", ".join(dynamic)
                + " is built for 1 (give --profile INPUT:MIN/OPT/MAX for other batches)"
            )
        assert_buildable(settings, installed, inputs, adapter.shape_tensor_inputs)
        if settings.calibration is None or adapter.family in ("11", RTX):
            return None
        from deploylens.core.trt.trt_calibrator import make_calibrator

        nonlocal device
        if device is None and settings.calibration.data:
            from deploylens.core.trt.device import TorchDevice

            device = TorchDevice()
        data, size = calibration_batches(inputs, settings)
        return make_calibrator(
            trt, settings.calibration.method, data, size, settings.calibration.cache, device
        )

    try:
        report = adapter.build(model, settings, engine_path, prepare=prepare)
    except ParseRejected as rejected:
        if all(f.node < 0 for f in rejected.findings):
            from deploylens.core.model.loading import read_model

            read_model(model)  # a model-level failure: our sentence when the file is the cause
        from deploylens.core.plugin_api import load_plugins
        from deploylens.core.trt.plugin_registry import registered_plugins

        registered = registered_plugins(adapter.trt)
        findings = explained(rejected.findings, load_plugins()[0], registered, adapter.product)
        return BuildResult(
            built=False,
            message=rejected.message,
            findings=findings,
            tensorrt=adapter.version,
            product=adapter.product,
            log=log_lines(adapter.log),
        )
    progress(0.95, "inspecting the engine")
    layers_path = str(Path(engine_path).with_suffix("")) + ".layers.json"
    source = "IEngineInspector"
    try:
        if rtx and not cuda_driver_present():
            raise UserError("no CUDA driver (libcuda) on this machine")
        engine = adapter.deserialize(Path(engine_path).read_bytes())
        text = adapter.inspect(engine)
    except Exception as exc:
        why = getattr(exc, "message", str(exc))
        text = ""
        if rtx:
            cuda = re.search(r"cudaError \d+: [^)]*", why)
            why = (
                "the plan was built ahead of time; loading it for IEngineInspector needs an "
                "RTX-class GPU and its driver" + (f" (here: {cuda.group(0)})" if cuda else "")
            )
        adapter.log.append(("warning", f"could not inspect the engine: {why}"))
    if not text and rtx:
        from deploylens.core.trt.builder_log import SOURCE, engine_layers, layer_info

        found = engine_layers(message for _, message in report.log)
        if found:  # the builder's own account of its layers, saved as such
            layers_path = str(Path(engine_path).with_suffix("")) + ".builder-layers.json"
            text, source = json.dumps(layer_info(found, report.bindings), indent=1), SOURCE
    layers = 0
    if text:
        atomic_write_text(layers_path, text)
        layers = len(parse_layer_info(json.loads(text), Path(layers_path).name).layers)
    else:
        layers_path = ""
    return BuildResult(
        built=True,
        engine=engine_path,
        engine_bytes=report.engine_bytes,
        seconds=report.seconds,
        tensorrt=adapter.version,
        product=adapter.product,
        layers_json=layers_path,
        layers_source=source if layers_path else "",
        layers=layers,
        phases=list(report.phases),
        log=log_lines(adapter.log),
        notices=notices,
        targets=build_targets(settings) if rtx else [],
        targets_named=rtx and bool(settings.compute_capabilities),
    )


def _shape(dims: list[Any], dynamic: int) -> str:
    """``dims`` with each dynamic dimension as ``dynamic`` (the leading batch as 1): a
    --profile example."""
    return "x".join(
        str(d) if isinstance(d, int) else ("1" if i == 0 else str(dynamic))
        for i, d in enumerate(dims)
    )


def log_lines(log: list[tuple[str, str]], limit: int = 400) -> list[str]:
    """The builder log for the report: what TensorRT said at INFO level and above (its VERBOSE
    lines run to tens of thousands for a transformer), the last ``limit`` of them."""
    kept = [f"[{level}] {message}" for level, message in log if level != "debug"]
    return kept[-limit:]


def build_job(ctx: Any, params: dict[str, Any]) -> BuildResult:
    from deploylens.core.trt.tensorrt_adapter import BuildCancelled

    try:
        return build_engine(params, ctx.progress, lambda: ctx.cancelled)
    except BuildCancelled:
        ctx.check_cancelled()  # the worker's own Cancelled: reported as "cancelled"
        raise
