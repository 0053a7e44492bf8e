"""The one evidence rule (core/results.py ``judged``), proved over every job's verdict: whatever
a result holds, a verdict that exits 0 stands on at least one thing checked (outputs compared,
nodes parsed, points measured), a failure never exits 0, and every verdict says what it rests
on. The results are generated from their own type hints (hypothesis), so a new result class, or
a new field that lets a verdict pass on nothing, is covered without editing this file."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.job_table import JOBS
from deploylens.core.results import (
    EXIT_INCONCLUSIVE,
    Evidence,
    Result,
    Verdict,
    judged,
    result_class,
)

# Field values a verdict reads as a key (any other string would be a bug of the test, not of
# the verdict): the metric a sensitivity plan is scored by.
CHOICES: dict[str, list[Any]] = {"metric": ["relL2", "cosine", "top1"]}
FLOATS = st.sampled_from([0.0, 1.0, -1.0, 1e-40, 0.5, 1e6, float("nan"), float("inf")])
TEXTS = st.sampled_from(["", "ok", "x", "no batch was compared", "inconclusive: zeros"])


def strategy(hint: Any, name: str = "") -> st.SearchStrategy[Any]:
    """Values of ``hint`` biased to the edges a verdict must survive: 0, empty, NaN, None."""
    if name in CHOICES:
        return st.sampled_from(CHOICES[name])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return st.none()
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(a, name) for a in args))
    if hint is type(None):
        return st.none()
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-1, 4)
    if hint is float:
        return FLOATS
    if hint is str:
        return TEXTS
    if origin in (list, typing.List) or hint is list:  # noqa: UP006
        return st.lists(strategy(args[0] if args else Any), max_size=3)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy(args[0]), max_size=3).map(tuple)
        return st.tuples(*(strategy(a) for a in args))
    if origin is dict or hint is dict:
        key, value = args if args else (str, Any)
        return st.dictionaries(strategy(key), strategy(value), max_size=2)
    if dataclasses.is_dataclass(hint):
        return dataclass_strategy(hint)
    raise NotImplementedError(f"no strategy for {hint!r} ({name})")


def dataclass_strategy(cls: Any) -> st.SearchStrategy[Any]:
    """Instances of ``cls``; a value class that checks itself (tolerances, settings) and
    refuses the drawn values is taken with its defaults (its own refusal is tested with it)."""
    hints = typed.hints(cls)
    fields = {
        f.name: strategy(hints[f.name], f.name)
        for f in dataclasses.fields(cls)
        if f.init and not f.name.startswith("_")
    }
    return st.fixed_dictionaries(fields).map(lambda kw: _made(cls, kw)).filter(_accepted)


_REFUSED = object()


def _made(cls: Any, values: dict[str, Any]) -> Any:
    try:
        return cls(**values)
    except UserError:
        try:
            return cls()
        except TypeError:  # no defaults to fall back on: drawn again
            return _REFUSED


def _accepted(value: Any) -> bool:
    return value is not _REFUSED


def judging_jobs() -> list[str]:
    found = []
    for name, job in JOBS.items():
        cls = result_class(name) if job.result else None
        if cls is not None and cls.judges():
            found.append(name)
    return found


def test_every_judging_job_is_covered() -> None:
    """The jobs whose results conclude something; the rule must hold for each (a new one
    joins by having a ``verdict``)."""
    jobs = judging_jobs()
    for expected in ("validate.outputs", "export.run", "surgery.apply", "build.engine"):
        assert expected in jobs, (expected, jobs)


def check_rule(verdict: Verdict) -> None:
    assert isinstance(verdict.evidence, Evidence), f"no evidence behind {verdict}"
    if verdict.exit_code == 0:
        assert verdict.evidence.count > 0, f"exit 0 on nothing: {verdict}"
        assert verdict.severity != "fail", verdict
    if verdict.severity == "fail":
        assert verdict.exit_code not in (0, EXIT_INCONCLUSIVE), verdict
    if verdict.evidence.count <= 0 and verdict.severity != "fail":
        assert verdict.exit_code == EXIT_INCONCLUSIVE, verdict
        assert "INCONCLUSIVE" in verdict.word, verdict  # the headline says it, not only the code


def verdict_classes() -> dict[str, Any]:
    """Every class whose ``verdict`` sets an exit status: the jobs' results, and the per-target
    reports ``deploylens support`` and the Support panel judge by, and ``deploylens trace``'s
    statistics (no job of their own)."""
    from deploylens.core.support.analysis import TargetReport
    from deploylens.core.support.measured_types import Prediction
    from deploylens.core.survey.rows import SurveyRow
    from deploylens.core.trace.stats_types import TraceStats

    found = {job: result_class(job) for job in judging_jobs()}
    return {**found, "support target": TargetReport, "support measured": Prediction,
            "trace": TraceStats, "survey row": SurveyRow}  # fmt: skip


@pytest.mark.parametrize("job", sorted(verdict_classes()))
def test_no_verdict_passes_on_nothing(job: str) -> None:
    cls = verdict_classes()[job]

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(dataclass_strategy(cls))
    def holds(result: Result) -> None:
        verdict = result.verdict()
        check_rule(verdict)
        if isinstance(result, Result):
            said = json.loads(result.to_json())["verdict"]  # every --json carries the reason
            assert said["exit_code"] == verdict.exit_code and said["evidence"]["what"]

    holds()


@given(
    st.integers(-2, 3),
    st.sampled_from(["pass", "warn", "fail"]),
    st.integers(0, 3),
    st.sampled_from(["", "the check could not run"]),
)
def test_judged_is_the_rule(count: int, severity: Any, exit_code: int, missing: str) -> None:
    verdict = judged(Evidence(count, "thing(s) checked", missing), "WORD", severity, exit_code)
    check_rule(verdict)
    if count > 0 or severity == "fail":
        assert verdict.word == "WORD"
    else:
        assert verdict.word == f"INCONCLUSIVE: {missing or '0 thing(s) checked'}"
