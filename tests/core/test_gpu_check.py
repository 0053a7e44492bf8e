"""The prepared GPU check (bench/gpu_check.py) cannot rot before a session is lent a device: CI
runs its whole plan against RecordingCuda — a RECORDING FAKE of the CUDA runtime (no GPU here)
whose durations are shaped like a healthy GPU — and its dry run. The fake proves the script,
the independent checks and the loop's issue order; it proves nothing about a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu_check.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO)  # fmt: skip


def test_the_whole_plan_runs_against_the_recording_fake(tmp_path: Path) -> None:
    done = run("--fake", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["fake"] and "fake" in report["device"].lower()
    assert len(report["captures"]) == 44  # every mode × batch × streams × host
    assert not report["errors"]  # a part that raised is recorded there, and the rest still ran
    assert all(t["met"] for t in report["targets"].values()), report["targets"]
    # the independent checks tell the modes apart: serial copies are never hidden
    serial = report["captures"]["serial-b32-s1-pinned"]
    assert serial["hidden_share"] == 0.0
    assert report["captures"]["pipelined-b32-s1-pinned"]["hidden_share"] >= 0.5
    assert report["captures"]["graph-pipelined-b32-s1-pinned"]["hidden_share"] >= 0.5
    assert (tmp_path / "traces.tar.gz").stat().st_size > 0  # the raw traces come back too
    assert report["lab"]["h2d-bound"]["synthetic"]  # no real kernels without a GPU, said so
    assert "skipped" in report["pytest"] and "FAKE" in done.stdout


def test_the_hidden_share_is_interval_arithmetic() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    from gpu_check import hidden_share

    copies = [(0.0, 10.0), (20.0, 30.0)]
    kernels = [(5.0, 25.0), (8.0, 12.0)]  # overlapping kernels count once
    assert hidden_share(copies, kernels) == 0.5


def test_the_dry_run_says_what_it_carries_and_fits_its_budget() -> None:
    done = run("--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    for part in ("install", "captures", "latency", "sweep", "lab", "pytest"):
        assert f"  {part}" in done.stdout
    assert "of the 480 s budget" in done.stdout and "msgspec" in done.stdout


def test_a_busy_gpu_called_launch_bound_misses_its_target() -> None:
    """The check that caught the first device run's sweep calling eager resnet18 at batch 32
    launch-bound: its GPU was 96 % busy without the profiler, the gaps were the profiler's."""
    sys.path.insert(0, str(SCRIPT.parent))
    from gpu_check import Report, busy_share, targets

    assert busy_share([(0.0, 4.0), (2.0, 6.0), (8.0, 9.0)], 10.0) == 0.7
    report = Report("a GPU", fake=False)
    report.captures = {
        "serial-b1-s1-pinned": {"pattern": "launch-bound", "unprofiled_busy": 0.3},
        "serial-b32-s1-pinned": {"pattern": "launch-bound", "unprofiled_busy": 0.96},
    }
    verdict = targets(report)["diagnosis never calls a busy GPU launch-bound"]
    assert not verdict["met"] and verdict["value"] == ["serial-b32-s1-pinned"]
    report.captures["serial-b32-s1-pinned"]["pattern"] = "compute-bound"
    assert targets(report)["diagnosis never calls a busy GPU launch-bound"]["met"]
