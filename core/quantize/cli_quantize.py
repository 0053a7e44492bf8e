"""``deploylens calibrate``: INT8 calibration on the CPU, its accuracy and the TensorRT cache."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from deploylens.core.command import Command
from deploylens.core.outputs import beside
from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest, StudyRequest
from deploylens.core.quantize.result import CalibrationReport
from deploylens.core.results import Result, Verdict

if TYPE_CHECKING:  # their modules import onnx: the worker reads the model, not this process
    from deploylens.core.quantize.sensitivity import Report
    from deploylens.core.quantize.study import StudyReport


def _calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    CalibrateRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")


def cmd_calibrate(args: argparse.Namespace) -> int:
    report: CalibrationReport = CalibrateRequest.from_args(args).prepared().run(args.python)
    print(report.to_json() if args.json else report.summary())
    return 0


def _sensitivity_arguments(parser: argparse.ArgumentParser) -> None:
    SensitivityRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")


def cmd_sensitivity(args: argparse.Namespace) -> int:
    request = SensitivityRequest.from_args(args).prepared()
    report: Report = request.run(args.python)
    if request.build and report.files is not None:
        report.build = build_plan(report.files.model, args.python)
    return _judged(report, args.json)  # exit 1: the plan misses the budget, or its build failed


def _judged(result: Report | StudyReport, as_json: bool) -> int:
    """The report (JSON with its verdict, or the summary and the verdict's sentence) and the
    verdict's exit code: the panel's banner reads the same ``verdict()``."""
    verdict = result.verdict()
    if as_json:
        print(result.to_json())  # its "verdict": the word, exit code and what it rests on
        return verdict.exit_code
    print(result.summary())
    print(verdict.word, file=sys.stderr if verdict.exit_code else sys.stdout)
    return verdict.exit_code


def build_plan(model: str, python: str | None) -> Verdict:
    """The plan's model built by TensorRT-RTX ahead of time: the build job's own verdict (the
    job found by its name: the quantize room does not import the TensorRT room)."""
    from deploylens.core.requests import request_class

    engine = beside(model, ".engine")  # trt.settings.default_engine, a room above
    build = request_class("build.engine").from_params(
        {
            "model": model,
            "engine": engine,
            "version": "rtx",
            "settings": {"compute_capabilities": ["sm89"]},
        }
    )
    try:
        result: Result = build.run(python)
        return result.verdict()
    except Exception as exc:  # a missing TensorRT-RTX or a rejected model: said, the plan stays
        return Verdict(str(getattr(exc, "message", exc)), "fail", 1)


def _study_arguments(parser: argparse.ArgumentParser) -> None:
    StudyRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")


def cmd_study(args: argparse.Namespace) -> int:
    result: StudyReport = StudyRequest.from_args(args).prepared().run(args.python)
    return _judged(result, args.json)  # exit 1 when a row failed or none scored


COMMANDS = (
    Command(
        "calibrate",
        "INT8 calibration on the CPU (ONNX Runtime, QDQ); accuracy vs fp32; TensorRT cache",
        _calibrate_arguments,
        cmd_calibrate,
    ),
    Command(
        "sensitivity",
        "which layers must stay out of INT8/FP16: per-layer sensitivity, a plan for every target",
        _sensitivity_arguments,
        cmd_sensitivity,
    ),
    Command(
        "calibration-study",
        "every calibration method and batch size on the same data: errors and differing ranges",
        _study_arguments,
        cmd_study,
    ),
)
