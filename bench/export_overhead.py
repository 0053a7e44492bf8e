"""Export overhead: DeployLens's export (warm worker round trip, checks excluded and reported
apart) vs calling torch.onnx.export directly, side by side in one run.

    python bench/export_overhead.py [--quick] [--json PATH]

Target (issue #5): ≤ 1.10× on resnet18 and mobilenet_v3_small, both exporters. CPU seconds are
printed beside wall: the direct export's in this process, ours in the warm worker's (read from
/proc before and after; its checks are included there, as the worker cannot time them apart).
"""

from __future__ import annotations

import argparse
import atexit
import io
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import process_cpu_s


def direct(name: str, exporter: str, out: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one direct export in this process."""
    import torch
    import torchvision

    started, cpu = time.perf_counter(), time.process_time()
    model = getattr(torchvision.models, name)(weights=None).eval()
    example = (torch.randn(1, 3, 224, 224),)
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        kwargs = {
            "dynamo": exporter == "dynamo",
            "opset_version": 18 if exporter == "dynamo" else 17,
        }
        if exporter == "dynamo":
            kwargs["verbose"] = False
        torch.onnx.export(model, example, out, **kwargs)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.jobs import Worker
    from deploylens.core.pytorch.source import parse_spec

    repeats = 2 if args.quick else 4
    scratch = Path(tempfile.mkdtemp(prefix="deploylens-export-bench-"))
    atexit.register(shutil.rmtree, scratch, True)  # ~130 MB of exported models per run
    rows = {}
    with Worker() as worker:
        for name in ("resnet18", "mobilenet_v3_small"):
            for exporter in ("torchscript", "dynamo"):
                opset = 18 if exporter == "dynamo" else 17
                settings = ExportSettings(
                    exporter=exporter, opset=opset, output=str(scratch / f"{name}.{exporter}.onnx")
                )
                params = {
                    "source": parse_spec(f"torchvision:{name}").to_dict(),
                    "settings": settings.to_dict(),
                }
                direct(name, exporter, str(scratch / "warm.onnx"))  # warm both sides
                worker.run("export.run", params)
                tool, checks, base, base_cpu, tool_cpu = [], [], [], [], []
                for _ in range(repeats):  # interleaved, so noise hits both sides alike
                    wall, cpu = direct(name, exporter, str(scratch / "direct.onnx"))
                    base.append(wall)
                    base_cpu.append(cpu)
                    assert worker.pid is not None
                    before = process_cpu_s(worker.pid)
                    started = time.perf_counter()
                    result = worker.run("export.run", params)
                    total = time.perf_counter() - started
                    tool_cpu.append(process_cpu_s(worker.pid) - before)
                    tool.append(total - result["checks_s"])
                    checks.append(result["checks_s"])
                rows[f"{name} {exporter}"] = {
                    "direct_s": statistics.median(base),
                    "deploylens_s": statistics.median(tool),
                    "checks_s": statistics.median(checks),
                    "direct_cpu_s": statistics.median(base_cpu),
                    "deploylens_cpu_s": statistics.median(tool_cpu),  # checks included
                }
    print(f"\nexport overhead ({repeats} interleaved runs each, warm worker)\n")
    print(
        f"{'model':32s} {'direct s':>9s} {'tool s':>8s} {'ratio':>6s} {'checks s':>9s} "
        f"{'CPU direct':>10s} {'CPU tool+checks':>15s}"
    )
    for key, row in rows.items():
        row["ratio"] = row["deploylens_s"] / row["direct_s"]
        verdict = "PASS" if row["ratio"] <= 1.10 else "FAIL"
        print(
            f"{key:32s} {row['direct_s']:9.3f} {row['deploylens_s']:8.3f} "
            f"{row['ratio']:6.2f} {row['checks_s']:9.3f} {row['direct_cpu_s']:10.3f} "
            f"{row['deploylens_cpu_s']:15.3f}  ≤ 1.10×: {verdict}"
        )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
