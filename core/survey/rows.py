"""One survey row per model: a cell per step (export, validate, support, a build per compute
capability), each the step's own verdict — the word, severity and exit code its single command
gives, what it rests on, and its CPU seconds — and the row's verdict over its cells."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, Verdict, judged
from deploylens.core.typed import AsDict

SKIPPED = "skipped"  # a step a failed earlier step leaves nothing for


@dataclass
class StepCell(AsDict):
    """One step of one model, as its single command judged it."""

    step: str  # "export", "validate", "support trt-rtx", "build sm89"
    word: str  # the verdict's headline, or why the step did not run
    severity: str  # "pass" | "warn" | "fail" | "skipped"
    exit_code: int
    evidence: int = 0  # what the verdict rests on (outputs compared, nodes parsed, plans)
    cpu_s: float = 0.0  # user + sys of the step's worker processes
    wall_s: float = 0.0
    detail: str = ""  # the exporter used and the other's cause, a plan's size, blockers


@dataclass
class SurveyRow(AsDict):
    """A model's row; ``key`` is its cache address (spec, file content, library versions and
    options), so a re-run recomputes only what changed."""

    spec: str
    key: str
    cells: list[StepCell] = field(default_factory=list)
    onnx: str = ""  # the file the steps after export ran on
    seconds: float = 0.0

    def cell(self, step: str) -> StepCell | None:
        return next((c for c in self.cells if c.step == step), None)

    def verdict(self) -> Verdict:
        """FAIL where a step failed; INCONCLUSIVE where one was (or could not run for want
        of a library, not for a failure before it); PASS over the steps that passed."""
        ran = [c for c in self.cells if c.severity != SKIPPED]
        passed = sum(1 for c in ran if c.exit_code == 0 and c.severity != "fail")
        evidence = Evidence(passed, "step(s) passed", "" if ran else "no step ran")
        failed = [c for c in ran if c.severity == "fail"]
        if failed:
            return judged(evidence, f"FAIL at {failed[0].step}: {failed[0].word}", "fail")
        unsure = [c for c in ran if c.exit_code == EXIT_INCONCLUSIVE]
        if unsure:
            return Verdict(f"INCONCLUSIVE at {unsure[0].step}: {unsure[0].word}", "warn",
                           EXIT_INCONCLUSIVE, evidence)  # fmt: skip
        return judged(evidence, "PASS", "pass")
