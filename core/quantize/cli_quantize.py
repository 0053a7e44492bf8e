"""``deploylens calibrate``: INT8 calibration on the CPU, its accuracy and the TensorRT cache."""

from __future__ import annotations

import argparse
import json

from deploylens.core.command import Command
from deploylens.core.quantize.request import CalibrateRequest


def _calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    CalibrateRequest.add_arguments(parser)
    parser.add_argument("--python", help="worker interpreter")
    parser.add_argument("--json", action="store_true")


def cmd_calibrate(args: argparse.Namespace) -> int:
    report = CalibrateRequest.from_args(args).prepared().run(args.python)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{report['method']}: {report['samples']} samples in {report['batches']} batches, "
        f"{report['seconds']:.2f} s ({report['samples_per_s']:.1f} samples/s); "
        f"{report['quantized_nodes']} QuantizeLinear nodes → {report['output']}"
    )
    accuracy = report.get("accuracy")
    if accuracy:
        top1 = accuracy["top1_agreement"]
        print(
            f"vs fp32 on {accuracy['samples']} samples: max abs {accuracy['max_abs']:.4g}, "
            f"rel L2 {accuracy['rel_l2']:.3g}, cosine {accuracy['cosine']:.5f}"
            + (f", top-1 agreement {top1:.1%}" if top1 is not None else "")
        )
        print(f"  accuracy measured on {accuracy['data']}")
    if report.get("trt_cache"):
        cache = report["trt_cache"]
        print(
            f"TensorRT calibration cache {cache['path']} ({cache['header']}, "
            f"{cache['tensors']} tensors)"
        )
    return 0


COMMANDS = (
    Command(
        "calibrate",
        "INT8 calibration on the CPU (ONNX Runtime, QDQ); accuracy vs fp32; TensorRT cache",
        _calibrate_arguments,
        cmd_calibrate,
    ),
)
