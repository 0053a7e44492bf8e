"""Typed job results (core/results.py): declared once in the job table, converted strictly on
the app side of the worker protocol, and the remote fetch driven by their declared file fields."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.job_table import JOBS
from deploylens.core.results import Result, result_class, result_files, typed_result
from deploylens.core.worker import protocol


def typed_jobs() -> list[str]:
    return [name for name, job in JOBS.items() if job.result]


def test_every_declared_result_is_a_result_dataclass_of_its_job() -> None:
    assert "validate.outputs" in typed_jobs()
    for name in typed_jobs():
        cls = result_class(name)
        assert cls is not None and issubclass(cls, Result), name
        assert dataclasses.is_dataclass(cls) and name == cls.JOB
        for field in cls.FILES:  # each declared file field names a field (dotted) of the class
            owner: Any = cls
            for part in field.split("."):
                hint = typed.hints(owner).get(part)
                assert hint is not None, (name, field)
                nested = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
                owner = nested[0] if nested else hint
    assert result_class("selftest.echo") is None and result_files("selftest.echo") is None


SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


# The jobs whose answer stays a plain dict: the worker's self-tests only (they echo what they
# were sent; skipped below by name)
UNTYPED: set[str] = set()


def test_every_job_the_app_reads_answers_a_typed_result() -> None:
    """A job added without a result class would bring string-key reads back to the CLI and
    the panels: this says which one."""
    untyped = {
        name for name, job in JOBS.items() if not job.result and not name.startswith("selftest.")
    }
    assert untyped == UNTYPED


@pytest.fixture(scope="module")
def validation() -> dict:
    """A real validate.outputs answer, layer-wise (NaN jumps included), as the wire carries it."""
    from deploylens.core.validate.run import validate_outputs
    from deploylens.core.validate.tolerances import Tolerances

    result = validate_outputs(
        str(SAMPLES / "small_cnn.dynamo.onnx"), None, "", Tolerances(), layerwise=True
    )
    wire: dict = json.loads(protocol.encode(protocol.result("j1", result.to_dict())))
    return wire["payload"]


def test_a_worker_answer_becomes_its_typed_result_and_back(validation: dict) -> None:
    from deploylens.core.validate.result import ValidationResult

    typed = typed_result("validate.outputs", validation)
    assert isinstance(typed, ValidationResult) and typed.layerwise is not None
    assert typed.layerwise.layers[0].node == validation["layerwise"]["layers"][0]["node"]
    assert json.dumps(typed.to_dict(), sort_keys=True) == json.dumps(validation, sort_keys=True)
    assert typed_result("validate.outputs", typed) is typed  # already typed: as it is


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(verdict="PASS"), "unknown setting 'verdict'"),
        (lambda d: d.pop("outputs"), "'outputs' is required"),
        (lambda d: d.update(passed="yes"), "passed must be true or false"),
        (lambda d: d["outputs"][0].update(max_abs="big"), "max_abs must be a number"),
    ],
)
def test_an_answer_that_does_not_fit_is_the_workers_error_not_a_keyerror(
    validation: dict, change, said: str
) -> None:
    """An older/newer worker or a producer that drifted from its type: said at the boundary."""
    payload = json.loads(json.dumps(validation))
    change(payload)
    with pytest.raises(UserError, match="does not match DeployLens's ValidationResult") as info:
        typed_result("validate.outputs", payload)
    assert said in str(info.value)


def test_the_remote_fetch_reads_only_the_declared_file_fields() -> None:
    """A typed result's files are its declared fields; a sentence that quotes a scratch path
    (a note, a reason) is not fetched as a file."""
    from deploylens.core.worker.transfer import _declared, _strings

    answer = {"report": {"steps": "/s/x.json", "note": "see /s/log.txt"}, "plans": ["/s/a", "/s/b"]}
    assert _declared(answer, ("report.steps", "plans")) == ["/s/x.json", "/s/a", "/s/b"]
    assert "see /s/log.txt" in _strings(answer)  # the old scan looked at every string


def test_the_cli_reads_a_real_workers_answer_strictly_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_job (the CLI's way) converts as the GUI does: a real worker's echo, declared here
    (in this process only) as a validation result, is refused with the sentence."""
    from dataclasses import replace

    from deploylens.core.jobs import run_job

    row = replace(JOBS["selftest.echo"], result="deploylens.core.validate.result:ValidationResult")
    monkeypatch.setitem(JOBS, "selftest.echo", row)
    with pytest.raises(UserError, match="does not match DeployLens's ValidationResult"):
        run_job("selftest.echo", {"a": 1}, on_progress=lambda f, t: None)
