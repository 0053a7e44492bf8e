"""``deploylens calibrate``: INT8 calibration on the CPU, its accuracy and the TensorRT cache."""

from __future__ import annotations

import argparse
import json
import sys

from deploylens.core.command import Command
from deploylens.core.outputs import beside
from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest, StudyRequest
from deploylens.core.quantize.result import CalibrationReport
from deploylens.core.quantize.sensitivity import Report
from deploylens.core.results import Result, Verdict


def _calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    CalibrateRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true")


def cmd_calibrate(args: argparse.Namespace) -> int:
    report: CalibrationReport = CalibrateRequest.from_args(args).prepared().run(args.python)
    print(report.to_json() if args.json else report.summary())
    return 0


def _sensitivity_arguments(parser: argparse.ArgumentParser) -> None:
    SensitivityRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true")


def cmd_sensitivity(args: argparse.Namespace) -> int:
    request = SensitivityRequest.from_args(args).prepared()
    report: Report = request.run(args.python)
    if request.build and report.files is not None:
        report.build = build_plan(report.files.model, args.python)
    print(report.to_json() if args.json else report.summary())
    return 0


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
    parser.add_argument("--json", action="store_true")


def cmd_study(args: argparse.Namespace) -> int:
    from deploylens.core.quantize.study import study_verdict

    result = StudyRequest.from_args(args).prepared().run(args.python)
    status, sentence = study_verdict(result)
    if args.json:
        print(json.dumps({**result, "verdict": sentence}, indent=2))
        return status
    fp32 = result["fp32"]
    print(f"calibration study of {result['model']} on {result['samples']} evaluation samples")
    print(f"  {'calibration':24s} {'rel L2':>10s} {'cosine':>10s} {'top-1':>8s} {'s':>6s}")
    if fp32 is not None:
        top = f"{fp32['top1']:.4f}" if fp32["top1"] is not None else "-"
        print(f"  {'FP32':24s} {fp32['rel_l2']:>10.4g} {fp32['cosine']:>10.6f} {top:>8s}")
    for row in result["rows"]:
        if row["status"] != "ok" or row["score"] is None:
            print(f"  {row['label']:24s} {row['status']}: {row['reason']}")
            continue
        score = row["score"]
        top = f"{score['top1']:.4f}" if score["top1"] is not None else "-"
        print(f"  {row['label']:24s} {score['rel_l2']:>10.4g} {score['cosine']:>10.6f} "
              f"{top:>8s} {row['seconds']:>6.2f}")  # fmt: skip
    if result["differing_ranges"]:
        print("  ranges that differ most between calibrations (largest |value| per calibration):")
    for item in result["differing_ranges"][:6]:
        peaks = ", ".join(f"{k} {v:.3g}" for k, v in item["peaks"].items())
        print(f"    {item['tensor']} (±{100 * item['relative_spread']:.0f}%): {peaks}")
    print(sentence, file=sys.stderr if status else sys.stdout)
    return status


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
