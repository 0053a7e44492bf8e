"""make lint's mypy sees the package: a type error that crosses modules (a call into
``deploylens.core`` with the wrong types, its result used as the wrong type) fails it. Before,
every ``deploylens.*`` import resolved to Any and such a file passed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

WRONG = """
from deploylens.core.codegen import literal
from deploylens.core.guard import check_model_file

count: int = literal(3)  # literal() returns the source text: a str
check_model_file(42)  # a path, not a number
"""

RIGHT = """
from deploylens.core.codegen import literal

text: str = literal(3)
"""


def _mypy(source: str, folder: Path) -> subprocess.CompletedProcess[str]:
    probe = folder / "probe_types.py"
    probe.write_text(source)
    return subprocess.run(
        [sys.executable, str(REPO / ".ci" / "mypy"), "--cache-dir", str(folder / "cache"),
         str(probe)],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip


def test_a_type_error_across_modules_fails_make_lints_mypy(tmp_path: Path) -> None:
    wrong = _mypy(WRONG, tmp_path)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Incompatible types in assignment (expression has type "str"' in wrong.stdout
    assert 'Argument 1 to "check_model_file" has incompatible type "int"' in wrong.stdout
    right = _mypy(RIGHT, tmp_path)
    assert right.returncode == 0, right.stdout + right.stderr


BOUNDARY_WRONG = """
from deploylens.core.model.request import InspectRequest
from deploylens.gui.job_manager import JobManager

def takes_a_count(count: int) -> None: ...

wrong: int = InspectRequest("model.onnx").run()  # a ModelSummary, not an int
JobManager().submit_request(InspectRequest("model.onnx")).on_finished(takes_a_count)
"""

BOUNDARY_RIGHT = """
from deploylens.core.model.request import InspectRequest
from deploylens.core.model.summary import ModelSummary
from deploylens.gui.job_manager import JobManager

def shows(summary: ModelSummary) -> None: ...

summary: ModelSummary = InspectRequest("model.onnx").run()
JobManager().submit_request(InspectRequest("model.onnx")).on_finished(shows)
"""


def test_a_wrong_type_at_the_job_boundary_fails_make_lint(tmp_path: Path) -> None:
    """``Request[R].run()`` returns ``R`` and the GUI's ``WorkerJob[R].on_finished`` takes a
    handler of ``R``: before, ``run()`` returned Any and the signal carried object, so both
    wrong lines passed."""
    wrong = _mypy(BOUNDARY_WRONG, tmp_path)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'expression has type "ModelSummary", variable has type "int"' in wrong.stdout
    assert 'Argument 1 to "on_finished" of "WorkerJob" has incompatible type' in wrong.stdout
    right = _mypy(BOUNDARY_RIGHT, tmp_path)
    assert right.returncode == 0, right.stdout + right.stderr
