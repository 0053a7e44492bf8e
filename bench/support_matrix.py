"""Support-matrix benchmark: full build cold and warm (cached), and model analysis of a
10k-node model, side by side in one run.

    python bench/support_matrix.py [--quick] [--json PATH]

Targets (issue #4): warm ≤ 1 s, cold ≤ 5 s, analysis of a 10k-node model ≤ 200 ms.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate_models
from measure import measured_here


def timed(function, repeats: int) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    """Median wall and CPU seconds (this process and the workers it reaped), last result."""
    times, cpus, result = [], [], None
    for _ in range(repeats):
        with measured_here() as span:
            result = function()
        times.append(span.wall_s)
        cpus.append(span.cpu_s)
    return statistics.median(times), statistics.median(cpus), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    os.environ["DEPLOYLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="deploylens-support-bench-")
    atexit.register(shutil.rmtree, os.environ["DEPLOYLENS_CACHE_DIR"], True)
    from deploylens.core.jobs import run_job
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.analysis import analyze, parse_target
    from deploylens.core.support.matrix import SupportMatrix

    def build(refresh: bool) -> SupportMatrix:
        return SupportMatrix.load(run_job("support.collect", {"refresh": refresh}).path)

    cold, cold_cpu, _ = timed(lambda: build(True), repeats)
    warm, warm_cpu, matrix = timed(lambda: build(False), repeats)
    cache = Path(run_job("support.collect").path).stat().st_size
    cache_dir = Path(tempfile.gettempdir()) / "deploylens-bench"
    cache_dir.mkdir(exist_ok=True)
    model_path = generate_models.transformer_like(cache_dir / "tl_10000.onnx", 10_000)
    model = read_model(model_path)
    targets = [parse_target("ort-cpu"), parse_target("trt-10.1")]
    analysis, analysis_cpu, reports = timed(lambda: analyze(model, matrix, targets), repeats * 2)
    rows = {
        "full build, cold (worker + torch + torchlib + ORT + onnx)": (cold, 5.0, cold_cpu),
        "full build, warm (cached per version set)": (warm, 1.0, warm_cpu),
        "analysis, 10k-node model, 2 targets": (analysis, 0.2, analysis_cpu),
    }
    print(f"\nsupport matrix benchmark ({repeats} runs each; cache file {cache / 1e6:.2f} MB)\n")
    print(f"{'case':58s} {'median s':>9s} {'CPU s':>7s}  target")
    for name, (seconds, limit, cpu) in rows.items():
        verdict = "PASS" if seconds <= limit else "FAIL"
        print(f"{name:58s} {seconds:9.3f} {cpu:7.3f}  ≤ {limit} s: {verdict}")
    print(f"\ncold / warm: {cold / warm:.1f}x (same run)")
    print(
        f"10k model: {len(model.graph.node):,} nodes; "
        + "; ".join(f"{r.target} {'OK' if r.ok else 'BLOCKED'}" for r in reports)
    )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {k: {"wall_s": v[0], "cpu_s": v[2]} for k, v in rows.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
