"""Packaged bundle: its size, the .deb's size, and process start → main window painted for the
bundle next to the venv's ``deploylens``, interleaved run by run (offscreen).

    python bench/package.py [--quick] [--json PATH] [--bundle DIR --deb FILE]

Without --bundle/--deb it builds them (packaging/build.py, ~2–3 min). Targets (issue 19): bundle
≤ 350 MB; start ≤ 1.5× the venv's, in CPU seconds of the process (wall printed beside it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from measure import run_measured  # noqa: E402


def folder_mb(path: Path) -> float:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6
    )


def start_to_window(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds from start until the window is shown and the process exits."""
    result = run_measured(command, timeout=120, env=env)
    if "shown" not in result.stdout:
        raise SystemExit(f"{command[0]} did not show its window: {result.stderr[-600:]}")
    return result.wall_s, result.cpu_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--bundle", type=Path, help="an unpacked bundle folder")
    parser.add_argument("--deb", type=Path, help="the .deb built with it")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="deploylens-package-bench-"))
    try:
        if args.bundle is None or args.deb is None:
            build = [sys.executable, str(REPO / "packaging" / "build.py")]
            subprocess.run([*build, "--out", str(scratch), "--keep", str(scratch / "bundle")],
                           check=True)  # fmt: skip
            args.bundle, args.deb = scratch / "bundle", next(scratch.glob("*.deb"))
        config = scratch / "config"
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DEPLOYLENS_CONFIG_DIR": str(config),
               "DEPLOYLENS_EXIT_WHEN_SHOWN": "1"}  # fmt: skip
        bundle_cmd = [str(args.bundle / "deploylens")]
        venv_cmd = [str(Path(sys.executable).with_name("deploylens"))]
        start_to_window(bundle_cmd, env)  # warm the page cache for both
        start_to_window(venv_cmd, env)
        runs = 5
        bundle, venv = [], []
        for _ in range(runs):
            bundle.append(start_to_window(bundle_cmd, env))
            venv.append(start_to_window(venv_cmd, env))
        result = {
            "bundle_mb": folder_mb(args.bundle),
            "deb_mb": args.deb.stat().st_size / 1e6,
            "bundle_start_s": statistics.median(w for w, _ in bundle),
            "venv_start_s": statistics.median(w for w, _ in venv),
            "bundle_start_cpu_s": statistics.median(c for _, c in bundle),
            "venv_start_cpu_s": statistics.median(c for _, c in venv),
            "runs": runs,
        }
        result["start_ratio"] = result["bundle_start_s"] / result["venv_start_s"]
        result["start_cpu_ratio"] = result["bundle_start_cpu_s"] / result["venv_start_cpu_s"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\npackaged bundle ({result['runs']} interleaved starts each, medians)\n")
    size_ok = "PASS" if result["bundle_mb"] <= 350 else "FAIL"
    start_ok = "PASS" if result["start_cpu_ratio"] <= 1.5 else "FAIL"
    print(f"{'bundle folder':30s} {result['bundle_mb']:8.1f} MB   ≤ 350 MB: {size_ok}")
    print(f"{'.deb':30s} {result['deb_mb']:8.1f} MB")
    print(f"{'start → window, venv':30s} {result['venv_start_s']:8.3f} s, "
          f"CPU {result['venv_start_cpu_s']:.3f} s")  # fmt: skip
    print(f"{'start → window, bundle':30s} {result['bundle_start_s']:8.3f} s, "
          f"CPU {result['bundle_start_cpu_s']:.3f} s   {result['start_cpu_ratio']:.2f}× the "
          f"venv's CPU (wall {result['start_ratio']:.2f}×)  ≤ 1.5×: {start_ok}")  # fmt: skip
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
