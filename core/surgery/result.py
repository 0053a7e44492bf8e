"""The ``surgery.apply`` job's typed result and its one verdict: ``deploylens surgery``'s exit
code and first line and the Surgery panel's banner are the same sentence (they judged a missing
``max_abs`` differently: the CLI as infinite, the panel as zero)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, Result, Verdict, judged
from deploylens.core.support.result import ParserFinding


@dataclass
class StepReport:
    """What one kept step did to the graph."""

    step: str  # the step's title ("fold", "pattern layernorm" …)
    nodes_before: int
    nodes_after: int
    ops_changed: dict[str, list[int]]  # op → [count before, count after], the ops that moved
    matches: int | None = None  # a pattern's: the subgraphs it rewrote
    details: dict[str, Any] = field(default_factory=dict)  # what the operation says of itself

    @classmethod
    def of(cls, report: dict[str, Any]) -> StepReport:
        """From an operation's own report (``graph_ops``, ``patterns``)."""
        common = ("step", "nodes_before", "nodes_after", "ops_changed", "matches")
        return cls(
            step=report["step"],
            nodes_before=report["nodes_before"],
            nodes_after=report["nodes_after"],
            ops_changed={op: list(moved) for op, moved in report["ops_changed"].items()},
            matches=report.get("matches"),
            details={k: v for k, v in report.items() if k not in common},
        )


@dataclass
class TensorCheck:
    """One tensor of the edited model against the original's, judged as Validate judges."""

    output: str
    passed: bool
    reason: str = ""
    max_abs: float | None = None  # None: the shapes differ (the reason says how)
    max_rel: float | None = None
    rel_l2: float | None = None


@dataclass
class SurgeryCompare:
    """Edited vs original on the same seeded inputs through ONNX Runtime."""

    comparable: bool
    passed: bool | None  # None: not checked (not comparable, or an output nobody computes)
    reason: str = ""
    uncompared: list[str] = field(default_factory=list)
    outputs: list[TensorCheck] = field(default_factory=list)
    layers: list[TensorCheck] = field(default_factory=list)
    first_diverging: str | None = None
    fed_from_original: list[str] = field(default_factory=list)
    atol: float = 0.0
    rtol: float = 0.0
    seed: int = 0
    via: str = ""

    def worst(self) -> str:
        """The largest abs error of the outputs, or — where shapes differ — what differs."""
        unmeasured = [o for o in self.outputs if o.max_abs is None and not o.passed]
        if unmeasured:
            return f"{unmeasured[0].output}: {unmeasured[0].reason or 'not measured'}"
        found = [o.max_abs for o in self.outputs if o.max_abs is not None]
        return f"max abs {max(found, default=0.0):.3g}"


@dataclass
class ParserCheck:
    """TensorRT-RTX's (else classic TensorRT's) parser on the edited model."""

    module: str | None  # None: neither is installed
    parsed: bool | None
    findings: list[ParserFinding] = field(default_factory=list)
    reason: str = ""


@dataclass
class GraphDiff:
    added: list[str]
    removed: list[str]
    changed: list[str]  # same name, another op, wiring or attributes


@dataclass
class SurgeryResult(Result):
    """The edited model written, what each kept step did, and the checks."""

    FILES = ("output", "steps_file", "script")

    model: str
    output: str
    steps_file: str
    steps: list[StepReport]
    kept: list[int]  # indexes of the request's steps that changed something
    skipped: list[str]  # titles of the steps that matched nothing
    nodes_before: int
    nodes_after: int
    diff: GraphDiff
    script: str = ""
    checker: str = ""  # "ok" or onnx.checker's first line
    checker_original: str = ""  # the same of the original, where the edit's check failed
    compare: SurgeryCompare | None = None
    tensorrt: ParserCheck | None = None

    def verdict(self) -> Verdict:
        """FAIL (exit 1) when the edited model computes other numbers or onnx.checker rejects
        it; PASS when its outputs were compared and match and no parser that ran refused it;
        INCONCLUSIVE (exit 3) when the comparison asked for could not run; WARN (exit 0) when
        it was skipped (``--no-compare``: the verdict then claims only the edit), saying what
        was not shown."""
        compare, trt = self.compare, self.tensorrt
        head = f"{self.nodes_before} → {self.nodes_after} nodes."
        compared = len(compare.outputs) if compare is not None else 0
        evidence = Evidence(compared, "output(s) compared with the original's")
        if compare is not None and compare.passed is False:
            first = compare.first_diverging
            head += f" First diverging tensor: {first}." if first else ""
            return judged(
                evidence,
                f"{head} The edited model DIFFERS from the original ({compare.worst()}).",
                "fail",
            )
        parts = [head]
        if self.checker and self.checker != "ok":
            if self.checker_original == "ok":  # the edit broke what was valid
                said = f"{head} onnx.checker rejects the edit: {self.checker}"
                return judged(evidence, said, "fail")
            parts.append(f"onnx.checker rejects it, as it does the original: {self.checker}.")
        if compare is not None and compare.passed:
            inner = compare.layers and not compare.first_diverging
            parts.append(
                f"Matches the original (≤ {compare.atol:g}"
                + (f"; {len(compare.layers)} shared inner tensors too)." if inner else ").")
            )
        else:
            parts.append(f"Not compared: {compare.reason if compare else 'skipped'}.")
        if trt is not None and trt.parsed is True:
            parts.append(f"{trt.module} parses every node.")
        elif trt is not None and trt.parsed is False:
            parts.append(f"{trt.module} cannot parse: {', '.join(f.op for f in trt.findings)}.")
        refused = trt is not None and trt.parsed is False
        if compare is None:  # skipped on request: only the edit and its checks are claimed
            checked = Evidence(1 if self.checker == "ok" else 0, "edit(s) onnx.checker accepts")
            return judged(checked, " ".join(parts), "warn")
        if compare.passed is None:  # the rule's INCONCLUSIVE, with every part still said
            missing = f"the comparison could not run: {compare.reason or 'not comparable'}"
            none = replace(evidence, count=0, missing=missing)
            return Verdict("INCONCLUSIVE — " + " ".join(parts), "warn", EXIT_INCONCLUSIVE, none)
        return judged(evidence, " ".join(parts), "warn" if refused else "pass")

    def diff_overlay(self) -> dict[str, str]:
        """``{node: "added" | "changed"}`` for the edited graph (removed nodes are not in it)."""
        return {
            **{name: "changed" for name in self.diff.changed},
            **{name: "added" for name in self.diff.added},
        }

    def summary(self) -> str:
        """The result as the CLI prints it (and the panel's details)."""
        lines = [self.verdict().word, f"  written: {self.output}"]
        for step in self.steps:
            moved = ", ".join(f"{op} {a}→{b}" for op, (a, b) in step.ops_changed.items())
            extra = f" ({step.matches} match(es))" if step.matches is not None else ""
            lines.append(
                f"  {step.step}{extra}: {step.nodes_before} → {step.nodes_after}"
                + (f"  [{moved}]" if moved else "")
            )
        lines += [f"  {title}: matched nothing — not kept as a step" for title in self.skipped]
        lines.append(f"  steps saved: {self.steps_file}")
        if self.script:
            lines.append(f"  reproducer: {self.script}")
        lines.append(f"  onnx checker: {self.checker}")
        if self.compare is not None:
            lines.extend(compare_lines(self.compare))
        trt = self.tensorrt
        if trt is not None and trt.parsed is None:
            lines.append(f"  TensorRT parser: {trt.reason}")
        elif trt is not None and trt.parsed:
            lines.append(f"  TensorRT parser ({trt.module}): every node parsed")
        elif trt is not None:
            for finding in trt.findings:
                lines.append(
                    f"  TensorRT parser ({trt.module}): {finding.node_name or finding.op}: "
                    f"{finding.message}"
                )
        return "\n".join(lines)


def compare_lines(compare: SurgeryCompare) -> list[str]:
    if not compare.comparable:
        return [f"  compare: not comparable — {compare.reason}"]
    verdict = (
        f"NOT CHECKED ({compare.reason})"
        if compare.passed is None
        else ("PASS" if compare.passed else "FAIL")
    )
    lines = []
    if compare.layers:
        lines.append(
            f"  {len(compare.layers)} shared intermediate tensors compared; first diverging: "
            f"{compare.first_diverging or 'none'}"
        )
    lines.append(
        f"  compare with the original: {verdict} ({compare.worst()}, atol {compare.atol:g}, "
        f"rtol {compare.rtol:g}, seed {compare.seed})"
    )
    return lines
