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
}
SEED = int(os.environ.get("DEPLOYLENS_FUZZ_SEED", "20261123"))
SCALE = float(os.environ.get("DEPLOYLENS_FUZZ_SCALE", "1"))


def test_the_campaign_is_at_least_2000_cases() -> None:
    assert sum(CASES.values()) >= 2000
    issue_44 = ("sidecar", "project", "registry", "measured", "archives", "traces", "profiles")
    assert sum(CASES[k] for k in issue_44) >= 2500


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
