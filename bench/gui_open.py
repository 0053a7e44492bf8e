"""The GUI launched on a model (``deploylens MODEL``), until its graph is painted and until the
whole open is done (the shapes job, which brings the checker's findings, finished), in CPU
seconds of the process tree beside wall seconds; with ``--ours-from DIR`` another checkout's
code runs beside this one, interleaved, for before/after figures in one run (issue 47: ≤ 1.2 s
of CPU until painted).

    python bench/gui_open.py [--quick] [--ours-from DIR] [--model M.onnx] [--json out.json]

``DIR`` holds a ``deploylens/`` whose rooms link to the other checkout (as
``bench/command_cost.py``'s); compile that checkout's bytecode first (``python -m compileall``):
a tree without it compiles ~190 modules on every start, ~0.25 s that no install pays.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate_models
from startup import CACHE, GUI_OPEN_SCRIPT, WHOLE_OPEN_SCRIPT, installed_bytecode, timed_child


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 5")
    parser.add_argument("--ours-from", type=Path, help="PYTHONPATH of the 'before' side")
    parser.add_argument("--model", type=Path, help="the model (default: 100k nodes)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    installed_bytecode()
    CACHE.mkdir(parents=True, exist_ok=True)
    model = args.model or generate_models.transformer_like(CACHE / "tl_100000.onnx", 100_000)
    config = tempfile.mkdtemp(prefix="deploylens-bench-config-")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DEPLOYLENS_CONFIG_DIR": config}
    sides = {"this checkout": env}
    if args.ours_from:
        sides = {"before": {**env, "PYTHONPATH": str(args.ours_from)}, "after": env}
    scripts = {"until painted": GUI_OPEN_SCRIPT, "whole open": WHOLE_OPEN_SCRIPT}
    runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {
        (side, case): [] for case in scripts for side in sides
    }
    try:
        for _ in range(3 if args.quick else 5):
            for case, script in scripts.items():
                for side, side_env in sides.items():
                    argv = [sys.executable, "-c", script, str(model)]
                    runs[(side, case)].append(timed_child(argv, side_env))
    finally:
        shutil.rmtree(config, ignore_errors=True)
    rows = []
    print(f"\nGUI open of {Path(model).name}, {len(next(iter(runs.values())))} rounds, medians\n")
    print(f"{'case':16s} {'side':14s} {'CPU s':>7s} {'wall s':>7s}  CPU per round")
    for (side, case), measured in runs.items():
        cpu = statistics.median(c for _, _, c in measured)
        wall = statistics.median(w for w, _, _ in measured)
        rows.append({"case": case, "side": side, "cpu_s": cpu, "wall_s": wall})
        each = " ".join(f"{c:.2f}" for _, _, c in measured)
        print(f"{case:16s} {side:14s} {cpu:7.2f} {wall:7.2f}  {each}")
    painted = [r["cpu_s"] for r in rows if r["case"] == "until painted"]
    print(f"\nuntil painted: {painted[-1]:.2f} s CPU (target ≤ 1.2)")
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {"model": str(model), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
