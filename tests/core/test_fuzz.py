"""The permanent fuzz campaign (tests/fuzz): ≥ 2,000 seeded cases per run across inspect, graph,
support, trace, engine, build settings, validate inputs and .pt/.pt2 sources. Each class runs
in its own process with a 6 GiB address-space cap and 20 s per case; every case must end in
success (or a negative verdict report) or exit 1 with one sentence naming the file — never a
traceback, a hang, a MemoryError, a native crash or a marker file from a hostile pickle.

``DEPLOYLENS_FUZZ_SEED`` changes the seed (the default makes the run a regression suite);
``DEPLOYLENS_FUZZ_SCALE`` multiplies the case counts for a longer campaign."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

CASES = {
    "inspect": 400,
    "graph": 250,
    "support": 250,
    "trace": 400,
    "engine": 300,
    "build": 300,
    "validate": 250,
    "torch": 150,
    "readers": 24,  # each runs a worker job (~1-3 s): the weight readers behind the guard
    # issue 44: the files we write and read back, archives, pathological traces, profiles
    "sidecar": 400,
    "project": 400,
    "registry": 400,
    "measured": 400,
    "archives": 120,
    "traces": 400,
    "profiles": 400,
    # issue 63: the newest surfaces (hf:DIR folders, integer input specs, support cache places)
    "hf": 88,
    "specs": 200,
    "cache": 12,
}
# Every input a user hands DeployLens, and the family that fuzzes its reader: a reader or spec
# kind added without one fails ``test_every_reader_has_a_family`` (issue 63).
SURFACES = {
    "ONNX model (inspect)": "inspect",
    "ONNX model (graph)": "graph",
    "ONNX model (support)": "support",
    "external data beside a model": "readers",
    "Chrome/Kineto, ONNX Runtime and nsys traces": "trace",
    "trtexec exports and logs": "engine",
    "build settings files": "build",
    ".npz / .npy / data folders": "validate",
    "TorchScript .pt and --weights state dicts": "torch",
    "hf:DIR folders (config, safetensors headers, weights)": "hf",
    "--input NAME:SHAPE:DTYPE:LOW:HIGH specs": "specs",
    "the support registry cache's place": "cache",
    "support registries read back": "registry",
    "measured caches read back": "measured",
    "capture sidecars": "sidecar",
    "project files": "project",
    "ExportedProgram .pt2 archives": "archives",
    "pathological traces": "traces",
    "optimization profiles": "profiles",
}
# the model-source kinds (core/pytorch/source.py SOURCE_KINDS) and the surface each reads
SOURCE_SURFACES = {
    "sample": "--input NAME:SHAPE:DTYPE:LOW:HIGH specs",
    "torchvision": "TorchScript .pt and --weights state dicts",
    "timm": "TorchScript .pt and --weights state dicts",
    "hf": "hf:DIR folders (config, safetensors headers, weights)",
    "python": "--input NAME:SHAPE:DTYPE:LOW:HIGH specs",
    "torchscript": "TorchScript .pt and --weights state dicts",
    "exported_program": "ExportedProgram .pt2 archives",
}
SEED = int(os.environ.get("DEPLOYLENS_FUZZ_SEED", "20261123"))
SCALE = float(os.environ.get("DEPLOYLENS_FUZZ_SCALE", "1"))


def test_the_campaign_is_at_least_2000_cases() -> None:
    assert sum(CASES.values()) >= 2000
    issue_44 = ("sidecar", "project", "registry", "measured", "archives", "traces", "profiles")
    assert sum(CASES[k] for k in issue_44) >= 2500


def test_every_reader_has_a_family() -> None:
    from deploylens.core.pytorch.source import SOURCE_KINDS
    from tests.fuzz.cases import CLASSES

    assert set(SURFACES.values()) == set(CASES) == set(CLASSES), "a family without a surface"
    assert set(SOURCE_KINDS) == set(SOURCE_SURFACES), "a model-source kind without a family"
    assert set(SOURCE_SURFACES.values()) <= set(SURFACES)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_fuzz_class(kind: str, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    current = tmp_path / "current.json"
    count = max(1, int(CASES[kind] * SCALE))
    result = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.runner", "--classes", kind, "--cases", str(count),
         "--seed", str(SEED), "--json", str(report_path)],
        cwd=REPO,
        env={**os.environ, "DEPLOYLENS_FUZZ_CURRENT": str(current)},
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    if not report_path.exists():  # the runner itself died: a native crash in some case
        last = current.read_text() if current.exists() else "before the first case"
        pytest.fail(
            f"the {kind} fuzz process ended with {result.returncode} during {last}:\n"
            f"{result.stderr[-3000:]}"
        )
    report = json.loads(report_path.read_text())
    counts = report["counts"].get(kind, {})
    print(f"{kind}: {counts}")  # shown with -rA / -s: the figures the issue note quotes
    assert sum(counts.values()) == count
    failures = [f"{f['case']} ({f['mutation']}): {f['detail'][-800:]}" for f in report["failures"]]
    assert not failures, f"{len(failures)} of {count} cases failed:\n" + "\n\n".join(failures[:10])
