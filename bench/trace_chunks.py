"""The trace import's chunk size, side by side: ``trace --stats`` (CPU of the process tree beside
wall), the decode floor in the same chunks, and how long the UI thread waits for the GIL while a
background thread imports (the Timeline panel's case: msgspec holds the GIL for a whole chunk's
decode, so a chunk's decode is the longest a frame can be held up).

Each size runs in fresh processes, the sizes alternated round by round so load moves them alike.
The import's chunk went from 8 MB to 1 MB on 2026-12-03 on these figures (docs/performance.md).

    python bench/trace_chunks.py [--quick] [--trace FILE] [--sizes 8192,1024] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from command_cost import FLOOR, synthetic_trace
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]

# ``trace --stats`` as the CLI runs it, with the sequential chunk set first
OURS = """
import contextlib, io, sys
import deploylens.core.trace.chrome_file as chrome_file
chrome_file.SEQUENTIAL_CHUNK = int(sys.argv[1])
from deploylens.core.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    sys.exit(main(["trace", "--stats", sys.argv[2]]))
"""
# the UI thread sleeps 1 ms at a time while another thread imports; its wake-up gaps are what a
# frame would wait
STALLS = """
import json, sys, threading, time
import deploylens.core.trace.chrome_file as chrome_file
chrome_file.SEQUENTIAL_CHUNK = int(sys.argv[1])
done = threading.Event()
def load():
    try:
        chrome_file.load_chrome(sys.argv[2])
    finally:
        done.set()
worker = threading.Thread(target=load)
worker.start()
gaps, last = [], time.perf_counter()
while not done.is_set():
    time.sleep(0.001)
    now = time.perf_counter()
    gaps.append(now - last)
    last = now
worker.join()
gaps.sort()
print(json.dumps({"p99_ms": gaps[int(len(gaps) * 0.99)] * 1e3, "max_ms": gaps[-1] * 1e3}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k events, 3 rounds")
    parser.add_argument("--trace", type=Path, help="a Chrome trace (default: synthetic, 1M)")
    parser.add_argument("--sizes", default="8192,1024", help="chunk sizes in KB")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    events = 100_000 if args.quick else 1_000_000
    trace = args.trace or synthetic_trace(events, ROOT / "out" / "bench-models")
    rounds = args.rounds or (3 if args.quick else 7)
    sizes = [int(s) << 10 for s in args.sizes.split(",")]
    found: dict[int, dict[str, list[float]]] = {s: {} for s in sizes}

    def record(size: int, key: str, value: float) -> None:
        found[size].setdefault(key, []).append(value)

    for _ in range(rounds):
        for size in sizes:
            sides = (
                ("ours", OURS, [str(size), str(trace)]),
                ("floor", FLOOR, [str(trace), str(size)]),
            )
            for label, script, argv in sides:
                run = run_measured([sys.executable, "-c", script, *argv])
                if run.rc != 0:
                    raise SystemExit(f"{label} at {size >> 10} KB: exit {run.rc}\n{run.stderr}")
                record(size, f"{label}_cpu_s", run.cpu_s)
                record(size, f"{label}_wall_s", run.wall_s)
            run = run_measured([sys.executable, "-c", STALLS, str(size), str(trace)])
            if run.rc != 0:
                raise SystemExit(f"stalls at {size >> 10} KB: exit {run.rc}\n{run.stderr}")
            for key, value in json.loads(run.stdout).items():
                record(size, key, value)
    rows = {
        f"{size >> 10} KB": {key: statistics.median(values) for key, values in by.items()}
        for size, by in found.items()
    }
    print(f"\n{trace.name}, {rounds} rounds alternated, medians\n")
    print(
        f"{'chunk':>8} {'ours CPU s':>11} {'wall s':>7} {'floor CPU s':>12} {'ratio':>6} "
        f"{'UI wait p99 ms':>15} {'max ms':>7}"
    )
    for label, r in rows.items():
        print(
            f"{label:>8} {r['ours_cpu_s']:>11.2f} {r['ours_wall_s']:>7.2f} "
            f"{r['floor_cpu_s']:>12.2f} {r['ours_cpu_s'] / r['floor_cpu_s']:>6.2f} "
            f"{r['p99_ms']:>15.1f} {r['max_ms']:>7.1f}"
        )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {"trace": str(trace), "rounds": rounds, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
