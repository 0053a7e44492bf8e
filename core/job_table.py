"""Every worker job, declared once: the function the worker runs, its typed request, what the app
calls it, and the ``deploylens`` command that fills its request. The worker's method table, the
request registry, the progress titles, the CLI's command homes and each request's ``JOB`` and
``COMMAND`` are read from here — adding a job is one row (plus its function, request and
command), not five string tables to keep in step. Stdlib only: the worker imports it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Job:
    name: str  # the worker method ("validate.outputs")
    run: str  # "module:function" the worker calls with (ctx, params)
    request: str = ""  # "module:Class" of its typed request ("" for the worker's own tests)
    title: str = ""  # what a progress line and the Jobs dock call it
    command: str = ""  # the deploylens command that fills its request ("" for none)
    cli: str = ""  # the module that declares that command
    here: bool = False  # always on this machine unless asked: reading a model never waits on,
    # or fails with, the Preferences' remote host
    result: str = ""  # "module:Class" of its typed result ("" while it answers a plain dict)


_CORE = "deploylens.core"

JOBS: dict[str, Job] = {
    job.name: job
    for job in (
        Job("model.inspect", f"{_CORE}.model.jobs:inspect_job",
            f"{_CORE}.model.request:InspectRequest", "inspect", here=True,
            result=f"{_CORE}.model.summary:ModelSummary"),
        Job("graph.shapes", f"{_CORE}.graph.jobs:shapes_job",
            f"{_CORE}.graph.request:ShapesRequest", "inferred shapes", here=True,
            result=f"{_CORE}.graph.result:ShapesResult"),
        Job("graph.tensor_stats", f"{_CORE}.graph.jobs:tensor_stats_job",
            f"{_CORE}.graph.request:TensorStatsRequest", "initializer statistics",
            result=f"{_CORE}.graph.result:TensorStatsResult"),
        Job("support.collect", f"{_CORE}.support.collect:support_job",
            f"{_CORE}.support.request:CollectRequest", "op support registries",
            result=f"{_CORE}.support.result:RegistryCache"),
        Job("support.tensorrt_probe", f"{_CORE}.trt.probe:tensorrt_probe_job",
            f"{_CORE}.support.request:TensorRTProbeRequest", "TensorRT parser",
            result=f"{_CORE}.support.result:ParserProbe"),
        Job("support.tensorrt_ops", f"{_CORE}.trt.probe:tensorrt_ops_job",
            f"{_CORE}.support.request:TensorRTOpsRequest", "TensorRT-RTX operators",
            result=f"{_CORE}.support.result:OperatorImporters"),
        Job("support.measure", f"{_CORE}.trt.cells:measure_job",
            f"{_CORE}.support.request:MeasureRequest", "measured op support",
            result=f"{_CORE}.support.measured_types:MeasuredMatrix"),
        Job("support.measured", f"{_CORE}.support.measure:measured_job",
            f"{_CORE}.support.request:MeasuredRequest", "measured op support (cache)",
            result=f"{_CORE}.support.result:MeasuredCache"),
        Job("support.sample_aten", f"{_CORE}.support.torch_ops:sample_aten_job",
            f"{_CORE}.support.request:SampleAtenRequest", "support: the sample's aten ops",
            result=f"{_CORE}.support.result:SampleAtenOps"),
        Job("export.run", f"{_CORE}.export.run:export_job",
            f"{_CORE}.export.request:ExportRequest", "export", "export",
            f"{_CORE}.export.cli_export", result=f"{_CORE}.export.result:ExportResult"),
        Job("validate.outputs", f"{_CORE}.validate.run:validate_job",
            f"{_CORE}.validate.request:ValidateRequest", "validate", "validate",
            f"{_CORE}.validate.cli_validate", result=f"{_CORE}.validate.result:ValidationResult"),
        Job("quantize.calibrate", f"{_CORE}.quantize.job:calibrate_job",
            f"{_CORE}.quantize.request:CalibrateRequest", "calibrate", "calibrate",
            f"{_CORE}.quantize.cli_quantize", result=f"{_CORE}.quantize.result:CalibrationReport"),
        Job("quantize.sensitivity", f"{_CORE}.quantize.job:sensitivity_job",
            f"{_CORE}.quantize.request:SensitivityRequest", "sensitivity", "sensitivity",
            f"{_CORE}.quantize.cli_quantize", result=f"{_CORE}.quantize.sensitivity:Report"),
        Job("quantize.study", f"{_CORE}.quantize.job:study_job",
            f"{_CORE}.quantize.request:StudyRequest", "calibration study", "calibration-study",
            f"{_CORE}.quantize.cli_quantize", result=f"{_CORE}.quantize.study:StudyReport"),
        Job("build.engine", f"{_CORE}.trt.job:build_job",
            f"{_CORE}.trt.request:BuildRequest", "build", "build", f"{_CORE}.trt.cli_build",
            result=f"{_CORE}.trt.result:BuildResult"),
        Job("surgery.apply", f"{_CORE}.surgery.job:surgery_job",
            f"{_CORE}.surgery.request:SurgeryRequest", "surgery", "surgery",
            f"{_CORE}.surgery.cli_surgery", result=f"{_CORE}.surgery.result:SurgeryResult"),
        Job("trace.profile", f"{_CORE}.trace.job:profile_job",
            f"{_CORE}.trace.request:ProfileRequest", "profile", "profile",
            f"{_CORE}.trace.cli_trace", result=f"{_CORE}.trace.result:ProfileResult"),
        Job("trace.sweep", f"{_CORE}.trace.job:sweep_job",
            f"{_CORE}.trace.request:SweepRequest", "sweep", "sweep", f"{_CORE}.trace.cli_trace",
            result=f"{_CORE}.trace.result:SweepResult"),
        Job("trace.lab", f"{_CORE}.trace.job:lab_job",
            f"{_CORE}.trace.request:LabRequest", "lab scenario", "lab",
            f"{_CORE}.trace.cli_trace", result=f"{_CORE}.trace.result:LabResult"),
        # the worker's own: the interpreter probe (Preferences, deploylens env) and self-tests
        Job("env.probe", f"{_CORE}.worker.selftest:probe_job", title="environment",
            result=f"{_CORE}.environment:Environment"),
        *(
            Job(f"selftest.{name}", f"{_CORE}.worker.selftest:{name}_job")
            for name in ("echo", "progress", "noisy", "segfault", "import", "user_error", "bug",
                         "sleep", "array", "keep")
        ),
    )
}  # fmt: skip

# Commands that run no job of their own (they read files here, or run several jobs), and the
# module that declares each: with the jobs' commands, where ``deploylens CMD`` finds its parser
COMMANDS_WITHOUT_JOBS: dict[str, str] = {
    "inspect": f"{_CORE}.model.cli_model",
    "graph": f"{_CORE}.graph.cli_graph",
    "support": f"{_CORE}.support.cli_support",
    "diagnose": f"{_CORE}.export.cli_export",
    "engine": f"{_CORE}.engine.cli_engine",
    "trace": f"{_CORE}.trace.cli_trace",
    "survey": f"{_CORE}.survey.cli_survey",
    "demo": f"{_CORE}.cli_demo",
    "env": f"{_CORE}.cli_demo",
    "screenshot": f"{_CORE}.cli_demo",
}


def command_homes() -> dict[str, str]:
    """Command → the module declaring it, every command of the CLI."""
    homes = {job.command: job.cli for job in JOBS.values() if job.command}
    return {**COMMANDS_WITHOUT_JOBS, **homes}


def job_for_request(path: str) -> Job | None:
    """The job whose request class is ``module:Class`` (how a request knows its JOB)."""
    return next((job for job in JOBS.values() if job.request == path), None)


def job_for_result(path: str) -> Job | None:
    """The job whose result class is ``module:Class`` (how a result knows its JOB)."""
    return next((job for job in JOBS.values() if job.result == path), None)


def result_class(job: str) -> Any:
    """The result class of ``job`` (None while it has none), imported only when asked."""
    spec = JOBS.get(job)
    if spec is None or not spec.result:
        return None
    module, _, name = spec.result.partition(":")
    return getattr(importlib.import_module(module), name)


def request_class(job: str) -> Any:
    """The request class of ``job``, imported only when asked (the worker imports one room)."""
    module, _, name = JOBS[job].request.partition(":")
    return getattr(importlib.import_module(module), name)


def request_files(job: str) -> dict[str, str]:
    """The file fields of ``job``'s request (``Request.FILES``): field → "in" | "out" | …"""
    spec = JOBS.get(job)
    return dict(getattr(request_class(job), "FILES", {})) if spec and spec.request else {}
