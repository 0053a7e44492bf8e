"""Issue 32's figure kept honest: every string-key read left in ``gui/`` and the ``cli_*``
modules is named by ``.ci/key_reads`` (a new one must be typed, or say what it reads), and the
reads of a job's result stay the few it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_string_key_read_in_the_views_and_the_cli_is_named() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "key_reads"), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr  # lists the unnamed reads
    figures = json.loads(done.stdout.splitlines()[0])
    assert figures["job_results"] <= 5, figures
    assert figures["reads"] <= 140, figures  # 231 when the count began (AST, this method)
