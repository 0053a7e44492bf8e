"""Per-layer INT8 sensitivity: DeployLens (one calibration, every variant from its scales, only
the part a variant changes run from FP32's kept tensors) vs the naive loop that re-runs
``quantize_static`` with calibration for each node, interleaved; and the digits CNN's real
accuracy: FP32, everything INT8, the chosen plan.

    python bench/sensitivity.py [--quick] [--json PATH]

Target (issue 21): ≥ 5× faster per node on resnet18 (16 calibration images, entropy,
one-node-at-a-time). Two naive loops: with DeployLens's calibration settings (512-bin entropy: the
same ranges), and with quantize_static's own entropy defaults (128 bins: cheaper, other ranges).
The whole analysis and each naive node are timed in wall and CPU seconds (ONNX Runtime's threads
spin while they wait, so CPU seconds move with the load too: quote them from one run).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]
SYMMETRIC = {"ActivationSymmetric": True, "WeightSymmetric": True}
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from measure import measured_here  # noqa: E402  (CPU of this process and what it waited for)


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
    with measured_here() as span:
        report = run_sensitivity(request, lambda f, m: None, work)
    return {"total_s": span.wall_s, "total_cpu_s": span.cpu_s, "per_node_s": report.per_node_s,
            "only_s": report.only_s, "nodes": len(report.nodes)}  # fmt: skip


def naive(
    model: Path, images: Path, work: Path, nodes: list[str], same: bool
) -> list[tuple[float, float]]:
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
    times = []  # (wall, CPU) seconds per node
    for number, node in enumerate(nodes):
        with measured_here() as span:
            out = work / f"naive{number}.onnx"
            if same:
                calibrated = collect_ranges(request, work / f"naive{number}", lambda f, m: None)
                graph = onnx.load(calibrated.prepared).graph
                others = [n.name for n in graph.node if n.name != node]
                write_qdq(calibrated, out, request, exclude=others)
            else:
                reader = FolderReader(request, inputs, lambda f, m: None)
                quantize_static(str(model), str(out), reader, quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                nodes_to_quantize=[node],
                                calibrate_method=CalibrationMethod.Entropy,
                                extra_options=SYMMETRIC)  # fmt: skip
            evaluator.score(str(out))
        times.append((span.wall_s, span.cpu_s))
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


def small_cnn_budget(work: Path, normal: bool) -> dict[str, float]:
    """Issue 43's case side by side: the bundled small CNN, 8 random arrays, budget rel L2 0.02.
    Ours (both calibration methods) against ONNX Runtime's ``quantize_static`` with its defaults
    (MinMax, asymmetric UINT8 activations — a scheme TensorRT cannot build) and with TensorRT's
    symmetric INT8, all-INT8 and with the 3 Conv + Gemm excluded, all scored on the same samples
    by the same evaluator."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from deploylens.core.quantize.calibrate import FolderReader
    from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest
    from deploylens.core.quantize.sensitivity import Evaluator, eval_feeds, run_sensitivity

    model = REPO / "resources" / "samples" / "small_cnn.dynamo.onnx"
    data = work / "random"
    data.mkdir(parents=True)
    for i in range(8):  # standard normal (issue 43's arrays: the input's range matters) or [0, 1)
        rng = np.random.default_rng(i)
        sample = rng.standard_normal((3, 32, 32)) if normal else rng.random((3, 32, 32))
        np.save(data / f"{i}.npy", sample.astype(np.float32))
    result: dict[str, float] = {}
    for method in ("minmax", "entropy"):
        request = SensitivityRequest(str(model), str(data), method=method, budget=0.02, evaluate=8)
        report = run_sensitivity(request, lambda f, m: None, work / method)
        result[f"ours_{method}_all_int8"] = report.full.rel_l2
        result[f"ours_{method}_plan_kept"] = len(report.plan.kept)
        result[f"ours_{method}_plan"] = report.plan.score.rel_l2
    evaluator = Evaluator(str(model), eval_feeds(SensitivityRequest(str(model), str(data),
                          evaluate=8)), None)  # fmt: skip
    import onnxruntime as ort

    inputs = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).get_inputs()
    compute = [n.name for n in onnx.load(model).graph.node if n.op_type in ("Conv", "Gemm")]
    schemes = {"ort_defaults": {}, "ort_symmetric_int8": {
        "activation_type": QuantType.QInt8, "weight_type": QuantType.QInt8,
        "extra_options": SYMMETRIC}}  # fmt: skip
    for name, options in schemes.items():
        for label, exclude in (("all_int8", []), ("conv_gemm_excluded", compute)):
            out = work / f"{name}_{label}.onnx"
            reader = FolderReader(CalibrateRequest(str(model), str(data)), inputs,
                                  lambda f, m: None)  # fmt: skip
            quantize_static(str(model), str(out), reader, quant_format=QuantFormat.QDQ,
                            nodes_to_exclude=exclude, **options)  # fmt: skip
            result[f"{name}_{label}"] = evaluator.score(str(out)).rel_l2
    return result


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
        same: list[tuple[float, float]] = []  # (wall, CPU) seconds per node
        defaults: list[tuple[float, float]] = []
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
            "ours_total_cpu_s": statistics.median(m["total_cpu_s"] for m in mine),
            "ours_per_node_s": statistics.median(m["per_node_s"] for m in mine),
            "ours_one_node_s": statistics.median(m["only_s"] for m in mine),
            "naive_same_calibration_s": statistics.median(w for w, _ in same),
            "naive_same_calibration_cpu_s": statistics.median(c for _, c in same),
            "naive_ort_defaults_s": statistics.median(w for w, _ in defaults),
            "naive_ort_defaults_cpu_s": statistics.median(c for _, c in defaults),
            "naive_nodes_timed": len(same),
        }
        result["speedup_per_node"] = result["naive_same_calibration_s"] / result["ours_one_node_s"]
        result["speedup_vs_ort_defaults"] = (
            result["naive_ort_defaults_s"] / result["ours_one_node_s"]
        )
        result["digits"] = digits_table(work)
        result["small_cnn_budget"] = {
            kind: small_cnn_budget(work / f"budget-{kind}", kind == "normal")
            for kind in ("normal", "uniform")
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nresnet18, INT8 entropy, 16 calibration images, {result['nodes']} nodes\n")
    print(f"{'DeployLens, whole analysis':44s} {result['ours_total_s']:8.1f} s"
          f"   CPU {result['ours_total_cpu_s']:.1f} s")  # fmt: skip
    print(f"{'DeployLens per node, both variants':44s} {result['ours_per_node_s']:8.2f} s")
    print(f"{'DeployLens per node, one node at a time':44s} {result['ours_one_node_s']:8.2f} s")
    print(f"{'naive, same calibration (512 bins)':44s} {result['naive_same_calibration_s']:8.2f} s"
          f"   CPU {result['naive_same_calibration_cpu_s']:.2f} s"
          f"   ({result['naive_nodes_timed']} nodes timed)")  # fmt: skip
    print(f"{'naive, quantize_static defaults (128 bins)':44s} "
          f"{result['naive_ort_defaults_s']:8.2f} s"
          f"   CPU {result['naive_ort_defaults_cpu_s']:.2f} s")  # fmt: skip
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
    for kind, b in result["small_cnn_budget"].items():
        print(f"\nsmall_cnn.dynamo.onnx, 8 {kind} random arrays, rel L2 vs FP32 (budget 0.02)")
        print(f"  {'':34s} {'all INT8':>9s} {'plan / excluded':>16s} {'kept':>5s}")
        for method in ("minmax", "entropy"):
            print(f"  {'DeployLens ' + method:34s} {b[f'ours_{method}_all_int8']:9.4f} "
                  f"{b[f'ours_{method}_plan']:16.4f} "
                  f"{int(b[f'ours_{method}_plan_kept']):5d}")  # fmt: skip
        for name in ("ort_defaults", "ort_symmetric_int8"):
            print(f"  {'quantize_static ' + name[4:]:34s} {b[f'{name}_all_int8']:9.4f} "
                  f"{b[f'{name}_conv_gemm_excluded']:16.4f} {4:5d}")  # fmt: skip
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
