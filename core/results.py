"""One typed result per worker job, the partner of its request (``core/requests.py``).

A job's function returns its ``Result`` (a dataclass); the worker sends it as JSON; the app side
(``run_job`` for the CLI, ``WorkerJob`` for the GUI, ``Worker.run_request``) turns the JSON back
into the same class, strictly (``core.typed``): a key the class does not declare, a missing
field or a wrong type is an error at the boundary, not a ``KeyError`` three calls later in a
panel. The CLI, the GUI panels, the saved files and the remote path rewriting read the same
fields; the verdict of a job is one method, so the CLI's exit code and the panel's headline
cannot disagree (they did: validate's CLI and the Surgery panel judged a missing ``max_abs``
differently).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.job_table import JOBS, job_for_result
from deploylens.core.job_table import result_class as _result_class

Severity = Literal["pass", "warn", "fail"]
T = TypeVar("T", bound="Result")
EXIT_INCONCLUSIVE = 3  # neither a pass nor a failure: the check had nothing to stand on


@dataclass(frozen=True)
class Evidence:
    """What a verdict rests on: how many things were checked (outputs compared, nodes parsed,
    events in scope) and, where that is none, why nothing could be checked."""

    count: int
    what: str  # "output(s) compared", "node(s) parsed", …
    missing: str = ""  # why nothing was checked ("ONNX Runtime could not run the file: …")

    def text(self) -> str:
        return f"{self.count:,} {self.what}" + (f" ({self.missing})" if self.missing else "")


@dataclass(frozen=True)
class Verdict:
    """What a job concluded: the headline word, how it is coloured, the CLI's exit code, and
    what it rests on (``judged`` makes every judging job's verdict, so none passes on nothing)."""

    word: str
    severity: Severity
    exit_code: int = 0
    evidence: Evidence | None = None

    @property
    def failed(self) -> bool:
        return self.severity == "fail"

    @property
    def inconclusive(self) -> bool:
        return self.exit_code == EXIT_INCONCLUSIVE

    def to_json_dict(self) -> dict[str, Any]:
        """The verdict as every ``--json`` output carries it: the reason for the exit code."""
        evidence = self.evidence
        return {
            "word": self.word,
            "severity": self.severity,
            "exit_code": self.exit_code,
            "evidence": None
            if evidence is None
            else {"count": evidence.count, "what": evidence.what, "missing": evidence.missing},
        }


def judged(evidence: Evidence, word: str, severity: Severity, exit_code: int = 0) -> Verdict:
    """The one evidence rule every judging job's verdict goes through: a verdict that is not a
    failure stands on at least one thing checked. On nothing (0 outputs compared, a check that
    could not run) it is INCONCLUSIVE (exit 3) with the reason — never "ok", never exit 0. A
    failure needs no count: a check that failed to run is a failure of that check."""
    if severity != "fail" and evidence.count <= 0:
        why = evidence.missing or f"0 {evidence.what}"
        return Verdict(f"INCONCLUSIVE: {why}", "warn", EXIT_INCONCLUSIVE, evidence)
    if severity == "fail" and exit_code in (0, EXIT_INCONCLUSIVE):
        exit_code = 1  # a failure never exits 0, nor as "inconclusive"
    return Verdict(word, severity, exit_code, evidence)


PASS = Verdict("PASS", "pass", 0)


def overall_exit(codes: list[int]) -> int:
    """One exit status for several verdicts (one per target): a failure wins over an
    inconclusive one, which wins over a pass — ``max`` would call a BLOCKED target beside an
    INCONCLUSIVE one inconclusive."""
    failures = [code for code in codes if code not in (0, EXIT_INCONCLUSIVE)]
    if failures:
        return max(failures)
    return EXIT_INCONCLUSIVE if EXIT_INCONCLUSIVE in codes else 0


class Result(typed.AsDict):
    """Base of the job results (each is a ``@dataclass``)."""

    JOB: ClassVar[str] = ""  # from the job table, by the class's own path
    # dotted fields naming files the job wrote: a remote worker's are fetched back by these
    FILES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        job = job_for_result(f"{cls.__module__}:{cls.__qualname__}")
        if job is not None:
            cls.JOB = job.name

    def to_json(self) -> str:
        """The result as the CLI's ``--json`` prints it (NaN as JSON's ``NaN`` token), with the
        verdict behind the exit code (word, severity, exit code, what it rests on) where the
        job judges."""
        data = self.to_dict()
        if self.judges():
            data["verdict"] = self.verdict().to_json_dict()
        return json.dumps(data, indent=2)

    @classmethod
    def judges(cls) -> bool:
        """Whether the job concludes something (its class has its own ``verdict``)."""
        return cls.verdict is not Result.verdict

    @classmethod
    def from_dict(cls: type[T], data: Any, where: str = "") -> T:
        """The result a worker sent (or a file held), every field checked."""
        return typed.from_dict(cls, data, where or f"the {cls.JOB or cls.__name__} result")

    def verdict(self) -> Verdict:
        """What the job concluded (a job that judges nothing finished: PASS)."""
        return PASS


def result_class(job: str) -> type[Result] | None:
    """The result class of ``job``, or None for a job that still answers a plain dict."""
    found: type[Result] | None = _result_class(job)
    return found


def typed_result(job: str, payload: Any) -> Any:
    """``payload`` as ``job``'s typed result (a job without one: the payload as sent). A
    payload that does not fit is the worker's bug, said as such — never a half-read result."""
    cls = result_class(job)
    if cls is None or isinstance(payload, cls):
        return payload
    try:
        return cls.from_dict(payload)
    except UserError as exc:
        raise UserError(
            f"The worker's answer to {job} does not match DeployLens's {cls.__name__}: {exc} "
            "(is the worker interpreter running another DeployLens version?)"
        ) from None


def result_files(job: str) -> tuple[str, ...] | None:
    """The declared file fields of ``job``'s result; None for a job without a typed result
    (a remote run then looks at every string of its answer for a path)."""
    cls = result_class(job) if job in JOBS else None
    return cls.FILES if cls is not None else None
