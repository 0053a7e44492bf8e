"""Hostile inputs at the sizes issue 44 measured, through the real CLI: each pathological Chrome
trace (a 2 GiB name, 720 MB of escapes, 600 MB of unrepresentable numbers, 8 GiB of spaces
gzipped, a 157 M-deep array, a 5,000-digit pid) and each `.pt2` archive bomb (100 members of
48 MiB zeros, members that under-declare their size). Each row: refused or read, wall and CPU
seconds of the process tree, peak RSS, and the import workers left running afterwards.

    python bench/hostile_inputs.py [--quick] [--json PATH]

Target (issue 44): every row ≤ 60 s and ≤ 2 GB, refused with one sentence or read, and no
process left behind. ``--quick`` runs each at a tenth of the size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import run_measured  # noqa: E402

import tests.fuzz.cases  # noqa: E402, F401  (own_cases is imported through it)
from tests.fuzz.own_cases import _bomb, _under_declared  # noqa: E402
from tests.helpers.hostile_traces import FULL, TRACES  # noqa: E402

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))
LIMIT_S, LIMIT_MB = 60.0, 2048.0


def workers_alive() -> int:
    """Trace-import worker processes running now (any left after a row is a leak)."""
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            count += b"deploylens.core.trace.import_workers" in command
    return count


def archives(folder: Path, scale: float) -> dict[str, Path]:
    """The bombs: many members that each pass a per-member floor, and the same archive with
    every member's declared size divided by 16 (it inflates past what it says)."""
    members = max(int(100 * scale), 10)
    many = _bomb(members, 48 << 20)
    made = {"pt2 many members": many, "pt2 under-declared": _under_declared(many, 16)}
    paths = {}
    for name, data in made.items():
        path = folder / (name.replace(" ", "-") + ".pt2")
        path.write_bytes(data)
        paths[name] = path
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0
    work = Path(tempfile.mkdtemp(prefix="deploylens-hostile-"))
    rows = []
    try:
        cases: list[tuple[str, Path, list[str]]] = []
        for name, make in TRACES.items():
            gz = name == "gzip-spaces"
            path = work / (f"{name}.json.gz" if gz else f"{name}.json")
            started = time.perf_counter()
            size = FULL[name] if name == "long-pid" else int(FULL[name] * scale)
            if name == "deep-array":  # the issue's: after 700 k good events
                TRACES[name](path, size, events=int(700_000 * scale))  # type: ignore[call-arg]
            else:
                make(path, size)
            print(f"made {path.name}: {path.stat().st_size / 1e6:,.1f} MB on disk "
                  f"in {time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
            cases.append((f"trace {name}", path, [DEPLOYLENS, "trace", str(path), "--stats"]))
        for name, path in archives(work, scale).items():
            out = str(work / "out.onnx")
            cases.append((name, path, [DEPLOYLENS, "export", str(path), "--out", out]))
        for name, path, command in cases:
            before = workers_alive()
            run = run_measured(command, timeout=300, env={**os.environ,
                               "DEPLOYLENS_NO_PROGRESS": "1"})  # fmt: skip
            time.sleep(1.0)  # a worker that outlives its CLI would still be here
            said = (run.stderr.strip() or run.stdout.strip()).splitlines()
            rows.append({
                "case": name, "disk_mb": path.stat().st_size / 1e6, "rc": run.rc,
                "wall_s": run.wall_s, "cpu_s": run.cpu_s, "peak_mb": run.peak_mb,
                "timed_out": run.timed_out, "left_running": workers_alive() - before,
                "said": said[-1][:160] if said else "",
                "traceback": "Traceback (most recent call last)" in run.stderr,
            })  # fmt: skip
            row = rows[-1]
            print(f"{name:26s} rc {row['rc']:3d} wall {row['wall_s']:6.1f} s cpu "
                  f"{row['cpu_s']:6.1f} s peak {row['peak_mb']:7.0f} MB left "
                  f"{row['left_running']}  {row['said'][:90]}", flush=True)  # fmt: skip
            if path.suffix in (".json", ".gz"):
                path.unlink()  # the next file needs the disk
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad = [r for r in rows if r["wall_s"] > LIMIT_S or r["peak_mb"] > LIMIT_MB or r["timed_out"]
           or r["left_running"] > 0 or r["traceback"]]  # fmt: skip
    verdict = "PASS" if not bad else "FAIL: " + ", ".join(r["case"] for r in bad)
    print(f"\n{len(rows)} hostile inputs; within {LIMIT_S:.0f} s, {LIMIT_MB:.0f} MB, one sentence "
          f"and nothing left running: {verdict}")  # fmt: skip
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {"rows": rows, "scale": scale})
    return 0


if __name__ == "__main__":
    sys.exit(main())
