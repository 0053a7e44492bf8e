"""Layer-wise validation: DeployLens vs torch.onnx.verification, side by side in one run, and the
peak memory of layer-wise mode on a model with more than 1 GB of activations.

    python bench/validate.py [--quick] [--json PATH]

Targets (issue #6): resnet18 layer-wise ≤ 3 s and ≥ 5× faster than
``verify_onnx_program(compare_intermediates=True)``; peak memory ≤ 2 GB with ≥ 1 GB of
activations. Both sides run in this process on the same exported program and the same input;
the full CLI round trip (a fresh worker, torch import included) is reported next to them.
"""

from __future__ import annotations

import argparse
import atexit
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from measure import run_measured  # noqa: E402

# Run in a fresh interpreter so the peak (VmHWM) belongs to layer-wise mode alone.
MEMORY_CHILD = r"""
import json, sys, warnings
import numpy as np, onnx, torch, torchvision
from deploylens.core.validate.layerwise import activation_bytes, compare_layers
from deploylens.core.validate.tolerances import Tolerances
path, side, budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
torch.manual_seed(0)
module = torchvision.models.resnet18().eval()
model = onnx.load(path)
x = np.random.default_rng(0).uniform(-1, 1, (1, 3, side, side)).astype(np.float32)
feeds = {model.graph.input[0].name: x}
result = compare_layers(model, feeds, Tolerances(), torch_module=module, budget_mb=budget)
sizes = activation_bytes(model, feeds)
probed = {layer.tensor for layer in result.layers}
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({
    "peak_rss_mb": int(hwm.split()[1]) / 1024,
    "activations_mb": sum(sizes.get(t, 0) for t in probed) / 2**20,
    "chunks": result.chunks,
    "compared": result.compared,
    "seconds": result.seconds,
}))
"""


def export(side: int, out: Path) -> object:
    import torch
    import torchvision

    torch.manual_seed(0)
    module = torchvision.models.resnet18().eval()
    example = (torch.randn(1, 3, side, side),)
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, example, dynamo=True, opset_version=18)
    program.save(str(out))
    return module, program, example


def speed(repeats: int, scratch: Path) -> dict[str, float]:
    import onnx
    from torch.onnx.verification import verify_onnx_program

    from deploylens.core.validate.layerwise import compare_layers
    from deploylens.core.validate.tolerances import Tolerances

    path = scratch / "resnet18.onnx"
    module, program, example = export(224, path)
    model = onnx.load(str(path))
    feeds = {model.graph.input[0].name: example[0].numpy()}
    tol = Tolerances(rtol={"": 1e-4}, atol={"": 1e-4})
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    compared = 0
    compare_layers(model, feeds, tol, torch_module=module)  # warm both sides' caches
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        started, cpu = time.perf_counter(), time.process_time()
        result = compare_layers(model, feeds, tol, torch_module=module)
        ours.append(time.perf_counter() - started)
        ours_cpu.append(time.process_time() - cpu)
        compared = result.compared
        started, cpu = time.perf_counter(), time.process_time()
        with redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            infos = verify_onnx_program(program, example, compare_intermediates=True)
        theirs.append(time.perf_counter() - started)
        theirs_cpu.append(time.process_time() - cpu)
    cli = run_measured(
        [
            *(sys.executable, "-m", "deploylens.core.cli", "validate", str(path), "--layerwise"),
            *("--torch", "torchvision:resnet18", "--rtol", "1e-4", "--atol", "1e-4"),
        ]
    )
    if cli.rc not in (0, 1):
        raise SystemExit(f"CLI failed: {cli.stderr[-400:]}")
    return {
        "deploylens_s": statistics.median(ours),
        "torch_verification_s": statistics.median(theirs),
        "speedup": statistics.median(theirs) / statistics.median(ours),
        "deploylens_cpu_s": statistics.median(ours_cpu),
        "torch_verification_cpu_s": statistics.median(theirs_cpu),
        "cpu_speedup": statistics.median(theirs_cpu) / statistics.median(ours_cpu),
        "deploylens_tensors": compared,
        "torch_verification_tensors": len(infos),
        "cli_round_trip_s": cli.wall_s,
        "cli_round_trip_cpu_s": cli.cpu_s,  # the CLI and its worker, torch import included
        "repeats": repeats,
    }


def memory(side: int, budget_mb: float, scratch: Path) -> dict[str, float] | None:
    path = scratch / f"resnet18_{side}.onnx"
    if not path.exists():
        export(side, path)
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(path), str(side), str(budget_mb)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="deploylens-validate-bench-"))
    atexit.register(shutil.rmtree, scratch, True)  # models of up to 2048² activations
    fast = speed(1 if args.quick else 3, scratch)
    side = 2048  # resnet18 at 2048² holds ~1.6 GB of compared activations
    chunked = memory(side, 256, scratch)
    at_once = None if args.quick else memory(side, 1e6, scratch)
    print(f"\nlayer-wise validation, resnet18 1×3×224×224 ({fast['repeats']} interleaved runs)\n")
    print(f"{'':38s} {'seconds':>9s} {'CPU s':>7s} {'tensors':>8s}")
    print(
        f"{'DeployLens compare_layers':38s} {fast['deploylens_s']:9.2f} "
        f"{fast['deploylens_cpu_s']:7.2f} {fast['deploylens_tensors']:8d}"
    )
    print(
        f"{'torch verify_onnx_program(intermediates)':38s} {fast['torch_verification_s']:9.2f} "
        f"{fast['torch_verification_cpu_s']:7.2f} {fast['torch_verification_tensors']:8d}"
    )
    print(
        f"{'speed-up':38s} {fast['speedup']:9.1f}× {fast['cpu_speedup']:6.1f}×"
        "   (target ≥ 5×, ours ≤ 3 s)"
    )
    print(
        f"{'CLI round trip (fresh worker)':38s} {fast['cli_round_trip_s']:9.2f} "
        f"{fast['cli_round_trip_cpu_s']:7.2f}"
    )
    print(f"\nmemory, resnet18 at 1×3×{side}×{side} (fresh process each, peak RSS)\n")
    print(f"{'mode':26s} {'activations MB':>15s} {'chunks':>7s} {'peak RSS MB':>12s} {'s':>6s}")
    for name, row in (("chunks of 256 MB", chunked), ("all at once", at_once)):
        if row is None:
            continue
        print(
            f"{name:26s} {row['activations_mb']:15.0f} {row['chunks']:7d} "
            f"{row['peak_rss_mb']:12.0f} {row['seconds']:6.1f}"
        )
    print("target: ≥ 1 GB of activations, peak ≤ 2048 MB in chunked mode")
    if args.json:
        from deploylens.core.files import write_json

        payload = {"speed": fast, "memory": {"side": side, "chunked": chunked, "at_once": at_once}}
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
