"""INT8 calibration benchmark (issue #7): resnet18 (torchvision, seeded random weights — no
downloads), ONNX Runtime static quantization to Q/DQ with MinMax, Entropy and Percentile, run side
by side in one process pinned to 2 CPUs. Reports calibration throughput (images/s, the whole
``calibrate`` call: preparation, image decoding, calibration and writing the model) and the Q/DQ
model's accuracy against fp32 on generated images: max abs error, rel L2, cosine, top-1 agreement.

    python bench/calibrate.py [--quick] [--json PATH]

The images are generated noise, so top-1 agreement says how well ranges preserve the argmax of
a random-weight network on out-of-distribution input — a stress test, not an ImageNet accuracy.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

THREADS = 2


def export_resnet18(out: Path) -> None:
    import torch
    import torchvision

    torch.manual_seed(0)
    module = torchvision.models.resnet18().eval()
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module, (torch.randn(1, 3, 224, 224),), dynamo=True, opset_version=18
        )
    program.save(str(out))


def write_images(folder: Path, count: int, seed: int) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        # smooth colour fields plus noise: closer to photographs than white noise
        base = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        image = Image.fromarray(base).resize((256, 256), Image.Resampling.BICUBIC)
        pixels = np.asarray(image, dtype=np.int16) + rng.integers(-20, 21, (256, 256, 3))
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(folder / f"{i:04d}.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="16 calibration images, 20 to evaluate"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:THREADS]
        os.sched_setaffinity(0, cpus)
    import onnxruntime as ort

    from deploylens.core.data.preprocess import iter_samples, parse_preprocess
    from deploylens.core.quantize.accuracy import measure
    from deploylens.core.quantize.calibrate import calibrate
    from deploylens.core.quantize.request import CalibrateRequest

    calib_count, eval_count = (16, 20) if args.quick else (64, 100)
    rows = []
    with tempfile.TemporaryDirectory(prefix="deploylens-bench-calib-") as scratch:
        root = Path(scratch)
        model = root / "resnet18.onnx"
        export_resnet18(model)
        write_images(root / "calib", calib_count, seed=1)
        write_images(root / "eval", eval_count, seed=2)
        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        fp32 = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        inputs = [(i.name, list(i.shape)) for i in fp32.get_inputs()]
        spec = parse_preprocess("imagenet")
        feeds = [
            {k: v[None] for k, v in s.items()} for s in iter_samples(root / "eval", inputs, spec)
        ]
        for method in ("minmax", "entropy", "percentile"):
            request = CalibrateRequest(
                str(model), str(root / "calib"), str(root / f"{method}.onnx"), method=method,
                preprocess="imagenet",
            )  # fmt: skip
            with redirect_stdout(io.StringIO()):  # ORT prints histogram chatter
                result = calibrate(request)
            qdq = ort.InferenceSession(result.output, options, providers=["CPUExecutionProvider"])
            accuracy = measure(fp32, qdq, feeds)
            rows.append({
                "method": method, "images": result.samples, "seconds": result.seconds,
                "images_per_s": result.samples_per_s, "qdq_nodes": result.quantized_nodes,
                **{k: v for k, v in accuracy.to_dict().items() if k != "samples"},
                "eval_samples": accuracy.samples,
            })  # fmt: skip
    print(f"resnet18 224², {calib_count} calibration images, {eval_count} generated samples, "
          f"{THREADS} CPUs, onnxruntime {ort.__version__}")  # fmt: skip
    print(
        f"{'method':<11}{'images/s':>9}{'s':>7}{'max abs':>9}{'rel L2':>8}{'cosine':>9}{'top-1':>7}"
    )
    for r in rows:
        top1 = r["top1_agreement"]
        print(f"{r['method']:<11}{r['images_per_s']:9.1f}{r['seconds']:7.2f}{r['max_abs']:9.4f}"
              f"{r['rel_l2']:8.4f}{r['cosine']:9.5f}{top1:7.0%}")  # fmt: skip
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {"threads": THREADS, "quick": args.quick, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
