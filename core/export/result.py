"""The ``export.run`` job's typed result, and its one verdict — shared by ``deploylens export``
(its exit status and first line) and the Export panel (its banner): written and agreeing with
PyTorch passes; written but not checked warns; not written, or written but computing other
numbers, fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from deploylens.core.export.diagnose import Finding
from deploylens.core.export.settings import ExportSettings
from deploylens.core.pytorch.source import ModelSource
from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, Result, Verdict, judged
from deploylens.core.validate.tolerances import Tolerances


@dataclass
class OrtSmoke:
    """ONNX Runtime run on the export's own inputs, judged as Validate judges."""

    ok: bool  # it ran
    reason: str = ""  # why it did not
    agrees: bool = False  # only ever True over compared outputs (``outputs`` > 0)
    disagreements: list[str] = field(default_factory=list)
    max_abs_diff: float | None = None  # None when an output had NaN/inf or nothing compared
    tolerances: Tolerances | None = None
    outputs: int = 0
    via: str = ""  # how custom ops ran (plugins' reference implementations)
    inconclusive: list[str] = field(default_factory=list)  # outputs with nothing to compare
    notes: list[str] = field(default_factory=list)  # how outputs were paired (detection sets)
    # why it did not run where that says nothing of the file (no kernel in this ONNX Runtime
    # build, no reference for a custom op): inconclusive, not a failure of the export
    unavailable: bool = False
    compared: int = 0  # outputs compared against PyTorch's (what "agrees" stands on)


@dataclass
class ExportResult(Result):
    """What the exporter wrote and what the checks found (or the findings, with their fixes)."""

    FILES = ("path",)

    source: ModelSource
    settings: ExportSettings
    cli: str  # the equivalent deploylens line
    script: str  # the tool-free Python reproducer
    path: str  # the model written (``.invalid.onnx`` when onnx.checker rejects it)
    plugin_errors: dict[str, str] = field(default_factory=dict)
    ok: bool = False
    invalid: bool = False
    findings: list[Finding] = field(default_factory=list)
    export_s: float = 0.0
    checks_s: float = 0.0
    export_warnings: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    requested_opset: int | None = None
    actual_opset: int | None = None
    opsets: dict[str, int] = field(default_factory=dict)
    nodes: int = 0
    checker: str = ""  # "ok" or onnx.checker's first line
    ort: OrtSmoke | None = None

    def verdict(self) -> Verdict:
        """PASS / INCONCLUSIVE / FAIL with the sentence that says why (``Verdict.word``): PASS
        only over outputs ONNX Runtime computed and compared; a smoke test that could not run
        on the export's own inputs fails the export, one that could not run for a reason
        outside the file (no kernel, no reference for a custom op) is INCONCLUSIVE."""
        exporter = self.settings.exporter
        if not self.ok:
            count = len(self.findings)
            fixes = f": {count} finding(s), each with its fixes" if count else ""
            return judged(
                Evidence(count, "finding(s)"),
                f"Export FAILED with the {exporter} exporter{fixes}.",
                "fail",
            )
        written = f"Exported {Path(self.path).name} (opset {self.actual_opset})"
        ort = self.ort
        compared = ort.compared if ort is not None else 0
        evidence = Evidence(compared, "output(s) compared with PyTorch's")
        if ort is None or not ort.ok:
            reason = (ort.reason if ort else "") or "the checker stopped first"
            if ort is not None and not ort.unavailable:
                return judged(
                    evidence,
                    f"{written}, but ONNX Runtime cannot run it on the inputs it was exported "
                    f"with: {reason}.",
                    "fail",
                )
            missing = f"ONNX Runtime's smoke test could not run: {reason}"
            return judged(Evidence(0, evidence.what, missing), written, "pass")
        if ort.disagreements or (not ort.agrees and not ort.inconclusive and ort.compared):
            first = (ort.disagreements or ["outside the tolerances"])[0]
            return judged(
                evidence,
                f"{written}, but ONNX Runtime's outputs DIFFER from PyTorch's: {first}.",
                "fail",
            )
        if ort.inconclusive:
            return Verdict(
                f"{written}; ONNX Runtime's check is INCONCLUSIVE: {ort.inconclusive[0]}.",
                "warn",
                EXIT_INCONCLUSIVE,
                evidence,
            )
        worst = ort.max_abs_diff
        how = f" (max |Δ| {worst:.3g})" if worst is not None else ""
        return judged(
            evidence, f"{written}; ONNX Runtime's outputs agree with PyTorch's{how}.", "pass"
        )

    def summary(self, show_code: bool = False) -> str:
        """The result as the CLI prints it (and the Export panel's summary box)."""
        verdict = self.verdict()
        lines = [f"$ {self.cli}", f"{verdict.severity.upper()}: {verdict.word}"]
        exporter = self.settings.exporter
        if self.ok:
            lines += [
                f"Exported {self.path} with the {exporter} exporter",
                f"  opset: requested {self.requested_opset or 'default'}, wrote "
                f"{self.actual_opset}; {self.nodes} nodes; onnx.checker {self.checker}",
                f"  ONNX Runtime smoke test: {smoke_text(self.ort)}",
                f"  export {self.export_s:.2f} s, checks {self.checks_s:.2f} s",
            ]
        else:
            lines.append(f"Export FAILED with the {exporter} exporter")
        lines += [f"  warning: {w}" for w in self.warnings]
        for finding in self.findings:
            where = " at ".join(x for x in (finding.module_path, finding.source) if x)
            lines.append(
                f"✗ {finding.operator or finding.kind}: {finding.message}"
                + (f"\n    called from {where}" if where else "")
            )
            if finding.other_exporter:
                other = "torchscript" if exporter == "dynamo" else "dynamo"
                said = (
                    "exports this model"
                    if finding.other_exporter == "exports"
                    else f"fails too: {finding.other_exporter}"
                )
                lines.append(f"    the {other} exporter, tried on the same model: {said}")
            for fix in finding.fixes:
                lines.append(f"    {fix.step}. [{fix.rung}] {fix.title}")
                if show_code and fix.code:
                    lines.extend("         " + line for line in fix.code.rstrip().splitlines())
        return "\n".join(lines)


def smoke_text(ort: OrtSmoke | None) -> str:
    if ort is None or not ort.ok:
        said = "could not run" if ort is not None and ort.unavailable else "FAILED to run"
        return f"{said}: {ort.reason if ort else 'the checker stopped first'}"
    worst = ort.max_abs_diff
    if ort.inconclusive and not ort.disagreements:
        return "inconclusive" + "".join(f"\n    ? {d}" for d in ort.inconclusive)
    return (
        ("agrees with torch" if ort.agrees else "DIFFERS from torch")
        + (f", max |Δ| {worst:.3g}" if worst is not None else "")
        + f" over {ort.compared} output(s)"
        + (f" ({ort.via})" if ort.via else "")
        + "".join(f"\n    ✗ {d}" for d in ort.disagreements)
        + "".join(f"\n    note: {n}" for n in ort.notes)
    )
