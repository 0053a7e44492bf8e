"""Per-layer INT8 sensitivity: DeployLens (one calibration, every variant from its scales, only
the part a variant changes run from FP32's kept tensors) vs the naive loop that re-runs
``quantize_static`` with calibration for each node, interleaved; and the digits CNN's real
accuracy: FP32, everything INT8, the chosen plan.

    python bench/sensitivity.py [--quick] [--json PATH]

Target (issue 21): ≥ 5× faster per node on resnet18 (16 calibration images, entropy,
one-node-at-a-time). Two naive loops: with DeployLens's calibration settings (512-bin entropy: the
same ranges), and with quantize_static's own entropy defaults (128 bins: cheaper, other ranges).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]
SYMMETRIC = {"ActivationSymmetric": True, "WeightSymmetric": True}
sys.path.insert(0, str(REPO))


def resnet18(folder: Path) -> tuple[Path, Path]:
    import torch
    import torchvision
    from PIL import Image

    model = folder / "resnet18.onnx"
    network = torchvision.models.resnet18(weights=None).eval()
    torch.onnx.export(network, (torch.rand(1, 3, 224, 224),), str(model), dynamo=False,
                      opset_version=17, input_names=["input"])  # fmt: skip
    images = folder / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for index in range(16):
        Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)).save(
            images / f"{index:02d}.png"
        )
    return model, images


def ours(model: Path, images: Path, work: Path) -> dict[str, float]:
    from deploylens.core.quantize.request import SensitivityRequest
    from deploylens.core.quantize.sensitivity import run_sensitivity

    request = SensitivityRequest(str(model), str(images), preprocess="imagenet", evaluate=16)
    started = time.perf_counter()
    report = run_sensitivity(request, lambda f, m: None, work)
    return {"total_s": time.perf_counter() - started, "per_node_s": report.per_node_s,
            "only_s": report.only_s, "nodes": len(report.nodes)}  # fmt: skip


def naive(model: Path, images: Path, work: Path, nodes: list[str], same: bool) -> list[float]:
    """Per node: calibrate again and quantize only that node, then score it on the same samples
    — what a script without DeployLens does. ``same``: with DeployLens's calibration settings
    (entropy over a 512-bin histogram, so the ranges are identical to ours), else with ONNX
    Runtime's quantize_static defaults (128 bins: cheaper, and different ranges)."""
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,  # fmt: skip
    )

    from deploylens.core.quantize.calibrate import FolderReader, collect_ranges, write_qdq
    from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest
    from deploylens.core.quantize.sensitivity import Evaluator, eval_feeds

    request = CalibrateRequest(str(model), str(images), preprocess="imagenet")
    evaluator = Evaluator(str(model), eval_feeds(SensitivityRequest(str(model), str(images),
                          preprocess="imagenet", evaluate=16)), None)  # fmt: skip
    inputs = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).get_inputs()
    times = []
    for number, node in enumerate(nodes):
        started = time.perf_counter()
        out = work / f"naive{number}.onnx"
        if same:
            calibrated = collect_ranges(request, work / f"naive{number}", lambda f, m: None)
            others = [n.name for n in onnx.load(calibrated.prepared).graph.node if n.name != node]
            write_qdq(calibrated, out, request, exclude=others)
        else:
            reader = FolderReader(request, inputs, lambda f, m: None)
            quantize_static(str(model), str(out), reader, quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            nodes_to_quantize=[node], calibrate_method=CalibrationMethod.Entropy,
                            extra_options=SYMMETRIC)  # fmt: skip
        evaluator.score(str(out))
        times.append(time.perf_counter() - started)
    return times


def digits_table(work: Path) -> dict[str, float]:
    import json
    import subprocess

    from tests.helpers.digits import accuracy, train_and_export

    files = train_and_export(work / "digits")
    labels = np.load(files["labels"])
    fp32 = accuracy(files["model"], files["eval"], labels)
    deploylens = str(Path(sys.executable).with_name("deploylens"))
    result = subprocess.run(
        [deploylens, "sensitivity", str(files["model"]), "--data", str(files["calib"]),
         "--eval-data", str(files["eval"]), "--labels", str(files["labels"]), "--metric", "top1",
         "--budget", str(fp32), "--evaluate", "297", "--out", str(work / "plan"), "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    if result.returncode not in (0, 1):  # 1: the plan misses the budget, reported below
        raise RuntimeError(result.stderr[-2000:])
    report = json.loads(result.stdout)
    return {
        "fp32_top1": fp32,
        "int8_top1": report["full"]["top1"],
        "plan_top1": accuracy(report["files"]["model"], files["eval"], labels),
        "plan_kept": len(report["plan"]["kept"]),
        "nodes": len(report["nodes"]),
        "plan_met": report["plan"]["met"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deploylens-sensitivity-bench-"))
    try:
        model, images = resnet18(work)
        rounds, sample = (1, 3) if args.quick else (2, 6)
        mine: list[dict[str, float]] = []
        same: list[float] = []
        defaults: list[float] = []
        from deploylens.core.quantize.mixed import QUANTIZABLE

        names = [n.name for n in onnx.load(model).graph.node if n.op_type in QUANTIZABLE]
        for round_ in range(rounds):  # interleaved: ours, then both naive loops, per round
            mine.append(ours(model, images, work / f"ours{round_}"))
            chunk = names[round_ * sample : (round_ + 1) * sample]
            same += naive(model, images, work, chunk, same=True)
            defaults += naive(model, images, work, chunk, same=False)
        result = {
            "nodes": mine[0]["nodes"],
            "ours_total_s": statistics.median(m["total_s"] for m in mine),
            "ours_per_node_s": statistics.median(m["per_node_s"] for m in mine),
            "ours_one_node_s": statistics.median(m["only_s"] for m in mine),
            "naive_same_calibration_s": statistics.median(same),
            "naive_ort_defaults_s": statistics.median(defaults),
            "naive_nodes_timed": len(same),
        }
        result["speedup_per_node"] = result["naive_same_calibration_s"] / result["ours_one_node_s"]
        result["speedup_vs_ort_defaults"] = (
            result["naive_ort_defaults_s"] / result["ours_one_node_s"]
        )
        result["digits"] = digits_table(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nresnet18, INT8 entropy, 16 calibration images, {result['nodes']} nodes\n")
    print(f"{'DeployLens, whole analysis':44s} {result['ours_total_s']:8.1f} s")
    print(f"{'DeployLens per node, both variants':44s} {result['ours_per_node_s']:8.2f} s")
    print(f"{'DeployLens per node, one node at a time':44s} {result['ours_one_node_s']:8.2f} s")
    print(f"{'naive, same calibration (512 bins)':44s} {result['naive_same_calibration_s']:8.2f} s"
          f"   ({result['naive_nodes_timed']} nodes timed)")  # fmt: skip
    print(f"{'naive, quantize_static defaults (128 bins)':44s} "
          f"{result['naive_ort_defaults_s']:8.2f} s")  # fmt: skip
    verdict = "PASS" if result["speedup_per_node"] >= 5 else "FAIL"
    print(
        f"speed-up per node, same ranges: {result['speedup_per_node']:.1f}×  ≥ 5×: {verdict}; "
        f"against ORT's cheaper default calibration: {result['speedup_vs_ort_defaults']:.1f}×\n"
    )
    d = result["digits"]
    print("digits CNN (trained here on scikit-learn's digits; 297 held-out images)")
    print(f"  top-1 FP32 {d['fp32_top1']:.4f} | everything INT8 {d['int8_top1']:.4f} | plan "
          f"{d['plan_top1']:.4f} with {d['plan_kept']}/{d['nodes']} layers kept in FP32 "
          f"({'meets' if d['plan_met'] else 'misses'} the budget, FP32's own)")  # fmt: skip
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
