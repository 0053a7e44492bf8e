"""The ``quantize.calibrate`` worker job: calibrate → Q/DQ model → accuracy vs fp32 → optional
TensorRT calibration cache, with progress and cancel (the worker's ``ctx``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from deploylens.core.quantize.calibrate import calibrate, few_samples_note
from deploylens.core.quantize.request import CalibrateRequest
from deploylens.core.quantize.result import CacheWritten, CalibrationReport
from deploylens.core.quantize.sensitivity import Report
from deploylens.core.quantize.study import StudyReport


def calibrate_and_measure(
    request: CalibrateRequest, progress: Any = None, log: Any = None, scratch: str | None = None
) -> CalibrationReport:
    """Shared by the job and the bench: everything a calibration run reports."""
    import onnxruntime as ort

    from deploylens.core.quantize import accuracy, trt_cache

    progress = progress or (lambda f, m: None)
    result = calibrate(request, lambda f, m: progress(0.8 * f, m), scratch)
    report = CalibrationReport(
        model=request.model,
        **{k: v for k, v in asdict(result).items() if k != "ranges"},  # the ranges stay here
        samples_per_s=result.samples_per_s,
        tensors=len(result.ranges),
        notes=few_samples_note(result.samples),
    )
    from deploylens.core.data.feeds import feed_batches, take_samples

    evaluate = request.evaluate
    if evaluate > 0:
        options = ort.SessionOptions()
        options.intra_op_num_threads = request.threads
        fp32 = ort.InferenceSession(request.model, options, providers=["CPUExecutionProvider"])
        qdq = ort.InferenceSession(result.output, options, providers=["CPUExecutionProvider"])
        # The user's data, never random noise: --eval-data, else the calibration data itself.
        source = request.eval_data or request.data
        feeds = take_samples(feed_batches(fp32, source, preprocess=request.preprocess), evaluate)
        measured = accuracy.measure(
            fp32,
            qdq,
            feeds,
            lambda n: progress(0.8 + 0.15 * n / len(feeds), f"accuracy {n}/{len(feeds)}"),
        )
        report.accuracy = measured
        measured.data = f"the first {measured.samples} samples of {source}" + (
            " (the calibration data itself: held-out data, --eval-data, is a fairer test)"
            if not request.eval_data
            else ""
        )
    cache_path = request.trt_cache
    if cache_path:
        version = request.trt_version
        cache = trt_cache.from_ranges(result.ranges, version, request.method)
        trt_cache.write_cache(cache, cache_path)
        report.trt_cache = CacheWritten(cache_path, cache.header, len(cache.scales))
        if request.method == "percentile" and log:
            log("TensorRT has no percentile calibrator: the cache carries the percentile ranges "
                "under the EntropyCalibration2 header.")  # fmt: skip
    progress(1.0, "done")
    return report


def calibrate_job(ctx: Any, params: dict[str, Any]) -> CalibrationReport:
    return calibrate_and_measure(
        CalibrateRequest.from_params(params), ctx.progress, ctx.log, ctx.workdir
    )


def sensitivity_job(ctx: Any, params: dict[str, Any]) -> Report:
    """The sensitivity analysis in the worker (progress per node; cancel lands there) and its
    outputs: report.json, the plan's model, TensorRT ≤ 10 settings and calibration cache."""
    from pathlib import Path

    from deploylens.core.quantize.plan import write_plan
    from deploylens.core.quantize.request import SensitivityRequest
    from deploylens.core.quantize.sensitivity import analyse

    request = SensitivityRequest.from_params(params)
    report, plan = analyse(request, ctx.progress, Path(ctx.workdir))
    return write_plan(report, plan, Path(request.out_dir))


def study_job(ctx: Any, params: dict[str, Any]) -> StudyReport:
    from dataclasses import asdict
    from pathlib import Path

    from deploylens.core import cluster, ray_start
    from deploylens.core.quantize.request import StudyRequest
    from deploylens.core.quantize.study import run_study, run_study_on_ray

    request = StudyRequest.from_params(params)

    def on_row(row: Any) -> None:  # each configuration reaches the app as it is done
        ctx.progress(None, f"{row.label}: {row.status}", data={"row": asdict(row)})

    executor = cluster.choose(request.executor, request.ray_address)
    reason = "asked for"
    if executor == "auto":  # the rows share one prepared model and evaluation set here
        executor, reason = (
            "worker",
            (
                "auto: on one machine the rows share one prepared model and evaluation set in the "
                "worker (Ray took 3x longer on a 12-image study); Ray with --ray-address or "
                "--executor ray"
            ),
        )
    if executor == "ray":
        ctx.progress(
            0.0, "starting Ray" + (f" at {request.ray_address}" if request.ray_address else "")
        )
        starting = ray_start.Starting(request.ray_address)
        try:
            started = starting.result()
            result = run_study_on_ray(request.sensitivity(), ctx.progress, lambda: ctx.cancelled,
                                      on_row)  # fmt: skip
        finally:
            starting.stop()
        result.cluster = started
    else:
        result = run_study(request.sensitivity(), ctx.progress, Path(ctx.workdir), on_row)
    result.executor, result.executor_reason = executor, reason
    return result
