"""Fold + simplify through DeployLens vs calling onnxslim directly, same job, same run.

Both variants load the model, fold/simplify it and save it: ``onnxslim`` is ``onnx.load`` →
``onnxslim.slim`` → ``onnx.save``; DeployLens is ``deploylens surgery MODEL --fold``'s worker
function (read, apply the step chain, atomic save, steps file) without the compare and the
parser check. Each run is a fresh process (peak RSS is the process's own), variants alternate
round by round, and the ratios are taken from medians of the same run: CPU seconds of the whole
process (user + sys, from start to exit) beside wall seconds. Target: ≤ 1.10× in CPU and RSS
(the wall ratio moves with the machine's load).

python bench/surgery.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import run_measured  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "deploylens-bench"
TARGET = 1.10

CHILD = r"""
import json, resource, sys, time
variant, src, out = sys.argv[1:4]
t0 = time.perf_counter()
if variant == "onnxslim":
    import onnx, onnxslim
    model = onnx.load(src)
    t1 = time.perf_counter()
    slim = onnxslim.slim(model)
    t2 = time.perf_counter()
    onnx.save(slim, out)
    nodes = (len(model.graph.node), len(slim.graph.node))
else:
    from deploylens.core.surgery.job import run_surgery
    from deploylens.core.surgery.request import SurgeryRequest
    from deploylens.core.surgery.steps import Step
    request = SurgeryRequest(model=src, steps=[Step(op="fold")], output=out,
                             compare=False, check_tensorrt=False)
    t1 = time.perf_counter()
    report = run_surgery(request)
    t2 = time.perf_counter()
    nodes = (report.nodes_before, report.nodes_after)
t3 = time.perf_counter()
print(json.dumps({"total_s": t3 - t0, "fold_s": t2 - t1, "nodes": nodes,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_once(variant: str, model: Path, out: Path) -> dict[str, Any]:
    done = run_measured([sys.executable, "-c", CHILD, variant, str(model), str(out)], 3600)
    if done.rc != 0:
        raise SystemExit(f"{variant} on {model.name} failed: {done.stderr[-1500:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_cpu_s"] = done.cpu_s  # the whole process: interpreter start and imports too
    row["process_wall_s"] = done.wall_s
    return row


def models(quick: bool) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    import generate_models
    from graph_layout import export_real_models

    CACHE.mkdir(parents=True, exist_ok=True)
    found = {k: v for k, v in export_real_models(True).items() if k.startswith("swin_t")}
    nodes = 10_000 if quick else 100_000
    found[f"generated {nodes // 1000}k"] = generate_models.transformer_like(
        CACHE / f"tl_{nodes}.onnx", nodes
    )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round; 10k generated nodes")
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    results: dict[str, Any] = {"target_ratio": TARGET, "rounds": rounds, "cases": {}}
    print(f"\nfold + simplify, {rounds} round(s), variants alternating, fresh process each")
    header = (
        f"{'model':22s} {'nodes':>13s} {'onnxslim s':>10s} {'ours s':>8s} {'wall ×':>7s} "
        f"{'CPU s':>11s} {'CPU ×':>6s} {'onnxslim MB':>11s} {'ours MB':>8s} {'RSS ×':>6s} "
        f"{'verdict':>7s}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in models(args.quick).items():
            runs: dict[str, list[dict[str, Any]]] = {"onnxslim": [], "deploylens": []}
            for index in range(rounds):
                order = ("onnxslim", "deploylens") if index % 2 == 0 else ("deploylens", "onnxslim")
                for variant in order:
                    out = Path(scratch) / f"{variant}.onnx"
                    runs[variant].append(run_once(variant, path, out))
            row = summarize(runs)
            results["cases"][name] = row
            verdict = "PASS" if max(row["cpu_ratio"], row["rss_ratio"]) <= TARGET else "FAIL"
            row["verdict"] = verdict
            before, after = row["nodes"]
            print(
                f"{name:22s} {before:>6,}→{after:<6,} {row['onnxslim_s']:10.2f} "
                f"{row['deploylens_s']:8.2f} {row['time_ratio']:7.3f} "
                f"{row['onnxslim_cpu_s']:5.2f}/{row['deploylens_cpu_s']:<5.2f} "
                f"{row['cpu_ratio']:6.3f} {row['onnxslim_mb']:11.0f} "
                f"{row['deploylens_mb']:8.0f} {row['rss_ratio']:6.3f} {verdict:>7s}"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    ours, theirs = runs["deploylens"], runs["onnxslim"]
    if ours[0]["nodes"] != theirs[0]["nodes"]:
        raise SystemExit(
            f"the two paths made different graphs: {ours[0]['nodes']} vs {theirs[0]['nodes']}"
        )
    time_ours = statistics.median(r["total_s"] for r in ours)
    time_theirs = statistics.median(r["total_s"] for r in theirs)
    cpu_ours = statistics.median(r["process_cpu_s"] for r in ours)
    cpu_theirs = statistics.median(r["process_cpu_s"] for r in theirs)
    rss_ours = statistics.median(r["peak_rss_mb"] for r in ours)
    rss_theirs = statistics.median(r["peak_rss_mb"] for r in theirs)
    return {
        "nodes": list(ours[0]["nodes"]),
        "onnxslim_s": time_theirs,
        "deploylens_s": time_ours,
        "time_ratio": time_ours / time_theirs,
        "onnxslim_cpu_s": cpu_theirs,
        "deploylens_cpu_s": cpu_ours,
        "cpu_ratio": cpu_ours / cpu_theirs,
        "onnxslim_fold_s": statistics.median(r["fold_s"] for r in theirs),
        "deploylens_fold_s": statistics.median(r["fold_s"] for r in ours),
        "onnxslim_mb": rss_theirs,
        "deploylens_mb": rss_ours,
        "rss_ratio": rss_ours / rss_theirs,
        "runs": runs,
    }


if __name__ == "__main__":
    raise SystemExit(main())
