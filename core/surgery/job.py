"""The worker side of ``surgery.apply``: read the model (weights too), apply the steps, save
atomically, write the steps file and the reproducer beside it, compare, and ask the parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_bytes, atomic_write_text
from deploylens.core.surgery.diff import graph_diff
from deploylens.core.surgery.result import (
    ParserCheck,
    StepReport,
    SurgeryCompare,
    SurgeryResult,
)
from deploylens.core.surgery.steps import apply_steps, reproducer_script, steps_to_toml


def load_with_weights(path: str) -> onnx.ModelProto:
    """The model and its external weights (a missing data file is said, not a crash)."""
    from deploylens.core.model.loading import read_model

    model = read_model(path)  # corrupt, empty, too big: one clear sentence
    try:
        onnx.load_external_data_for_model(model, str(Path(path).parent))
    except (OSError, ValueError) as exc:
        raise UserError(f"{Path(path).name}: its external data cannot be read ({exc})") from None
    return model


def idle(step: Any, report: dict[str, Any]) -> bool:
    """A pattern step that matched nothing (its report counts the matches)."""
    return step.op == "pattern" and report.get("matches") == 0


def run_surgery(request: Any, progress: Any = None) -> SurgeryResult:
    model = load_with_weights(request.model)
    edited, reports = apply_steps(model, request.steps, progress)
    # a pattern that matched nothing changed nothing: it is said, not kept as a step
    kept = [i for i, r in enumerate(reports) if not idle(request.steps[i], r)]
    if not kept:
        titles = ", ".join(step.title() for step in request.steps)
        raise UserError(
            f"{titles} matched nothing in {Path(request.model).name}: nothing was written",
            "a pattern rewrites only the subgraphs it recognises (deploylens surgery --help)",
        )
    output = request.output_path()
    data = edited.SerializeToString()
    atomic_write_bytes(output, data)  # a killed job never leaves a half model under its name
    steps_file = str(Path(output).with_suffix(".steps.toml"))
    atomic_write_text(steps_file, steps_to_toml([request.steps[i] for i in kept]))
    result = SurgeryResult(
        model=request.model,
        output=output,
        steps_file=steps_file,
        steps=[StepReport.of(reports[i]) for i in kept],
        kept=kept,
        skipped=[reports[i]["step"] for i in range(len(reports)) if i not in kept],
        nodes_before=len(model.graph.node),
        nodes_after=len(edited.graph.node),
        diff=graph_diff(model, edited),
    )
    if request.script:
        kept_steps = [request.steps[i] for i in kept]
        atomic_write_text(request.script, reproducer_script(request.model, output, kept_steps))
        result.script = request.script
    try:
        onnx.checker.check_model(data)  # the bytes already serialized: no second copy
        result.checker = "ok"
    except onnx.checker.ValidationError as exc:
        result.checker = str(exc).strip().splitlines()[0][:300]
        try:  # did the edit break it, or was the original already so?
            onnx.checker.check_model(model)
            result.checker_original = "ok"
        except onnx.checker.ValidationError as before:
            result.checker_original = str(before).strip().splitlines()[0][:300]
    if request.compare:
        from deploylens.core.plugin_api import load_plugins
        from deploylens.core.surgery.compare import compare_models

        try:
            result.compare = compare_models(
                request.model, output, list(load_plugins()[0].values()), inputs=request.inputs
            )
        except UserError as exc:
            result.compare = SurgeryCompare(comparable=False, passed=None, reason=exc.message)
    if request.check_tensorrt:
        result.tensorrt = parser_verdict(output, edited)
    return result


def parser_verdict(path: str, model: onnx.ModelProto | None = None) -> ParserCheck:
    """TensorRT-RTX's (else classic TensorRT's) parser on the edited model; absent is said.
    ``model``: the proto the file was written from (it names the nodes: no second parse)."""
    from deploylens.core.trt.probe import probe_model
    from deploylens.core.trt.tensorrt_adapter import CLASSIC, RTX_MODULE

    for module in (RTX_MODULE, CLASSIC):
        try:
            verdict = probe_model(path, module=module, model=model)
        except UserError:
            continue  # this TensorRT is not installed
        return ParserCheck(module, not verdict.findings, verdict.findings)
    return ParserCheck(None, None, reason="no TensorRT or TensorRT-RTX installed")


def surgery_job(ctx: Any, params: dict[str, Any]) -> SurgeryResult:
    from deploylens.core.surgery.request import SurgeryRequest

    request = SurgeryRequest.from_params(params)
    return run_surgery(request, lambda f, m: ctx.progress(0.8 * f, m))
