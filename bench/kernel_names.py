"""Kernel-table cost against the number of distinct kernel names (issue 47): the same trace
(500k kernels; 100k with --quick) with its kernels spread over 50 and over 50,000 names, the
table built by today's grouped pass (one sort, every name's percentiles at once) and, side by
side in the same run, by the per-name loop it replaced (``np.percentile`` per name, kept here
as the reference). CPU seconds of this process (the table is one thread) beside wall seconds.

Target: the statistics (``trace_stats``: table, streams, overlap, copies, hints) of 50,000
names within 2x the CPU of 50 names.

    python bench/kernel_names.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # synthetic traces live with the tests (tests/helpers)

from deploylens.core.trace.model import KIND, Trace  # noqa: E402
from deploylens.core.trace.stats import kernel_table, trace_stats  # noqa: E402
from tests.helpers.synthetic_trace import make_trace  # noqa: E402


def with_names(trace: Trace, distinct: int, seed: int = 3) -> Trace:
    """The trace with its kernels renamed over ``distinct`` names (other events untouched)."""
    rng = np.random.default_rng(seed)
    kernels = trace.kind == KIND["kernel"]
    base = len(trace.names)
    name = trace.name.astype(np.int64)
    name[kernels] = base + rng.integers(0, distinct, int(kernels.sum()))
    names = trace.names + [f"void fused_kernel_{i}<float>(Params)" for i in range(distinct)]
    return replace(trace, name=name.astype(np.int32), names=names)


def per_name_reference(trace: Trace) -> int:
    """The replaced implementation's shape: group, then numpy's median/percentiles per name."""
    mask = trace.kind == KIND["kernel"]
    name, dur = trace.name[mask], trace.dur[mask]
    order = np.lexsort((dur, name))
    name, dur = name[order], dur[order]
    cuts = np.flatnonzero(np.diff(name)) + 1
    rows = 0
    for d in np.split(dur.astype(np.float64), cuts):
        np.median(d), np.percentile(d, 90), np.percentile(d, 99), d.sum(), d.mean()
        rows += 1
    return rows


def timed(action: Callable[[], object], runs: int) -> tuple[float, float]:
    """Best CPU and wall seconds over ``runs``."""
    cpu, wall = [], []
    for _ in range(runs):
        c, w = time.process_time(), time.perf_counter()
        action()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    events = 200_000 if args.quick else 1_000_000
    runs = 2 if args.quick else 3
    base = make_trace(events)
    rows = []
    for distinct in (50, 50_000):
        trace = with_names(base, distinct)
        kernels = int((trace.kind == KIND["kernel"]).sum())
        used = int(np.unique(trace.name[trace.kind == KIND["kernel"]]).size)
        assert len(kernel_table(trace)) == used
        ours = timed(lambda t=trace: kernel_table(t), runs)
        before = timed(lambda t=trace: per_name_reference(t), runs)
        whole = timed(lambda t=trace: trace_stats(t), runs)
        rows.append(
            {
                "kernels": kernels,
                "names": used,
                "grouped_cpu_s": ours[0],
                "grouped_wall_s": ours[1],
                "per_name_cpu_s": before[0],
                "per_name_wall_s": before[1],
                "trace_stats_cpu_s": whole[0],
                "trace_stats_wall_s": whole[1],
            }
        )
    ratio = rows[1]["grouped_cpu_s"] / max(rows[0]["grouped_cpu_s"], 1e-9)
    stats_ratio = rows[1]["trace_stats_cpu_s"] / max(rows[0]["trace_stats_cpu_s"], 1e-9)
    before_ratio = rows[1]["per_name_cpu_s"] / max(rows[0]["per_name_cpu_s"], 1e-9)
    print(
        f"{'kernels':>9} {'names':>7} {'table CPU s':>12} {'wall s':>7}"
        f" {'per-name CPU s':>15} {'wall s':>7} {'trace_stats CPU s':>18} {'wall s':>7}"
    )
    for r in rows:
        print(
            f"{r['kernels']:>9,} {r['names']:>7,} {r['grouped_cpu_s']:>12.3f}"
            f" {r['grouped_wall_s']:>7.3f} {r['per_name_cpu_s']:>15.3f}"
            f" {r['per_name_wall_s']:>7.3f}"
            f" {r['trace_stats_cpu_s']:>18.3f} {r['trace_stats_wall_s']:>7.3f}"
        )
    print(
        f"many names / 50 names, CPU: whole statistics {stats_ratio:.2f}x (target <= 2x); "
        f"the table alone {ratio:.1f}x (one Python row per name), "
        f"the per-name percentile loop it replaced {before_ratio:.1f}x"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "trace_stats_cpu_ratio": stats_ratio,
                    "table_cpu_ratio": ratio,
                    "per_name_cpu_ratio": before_ratio,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
