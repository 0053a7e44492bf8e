"""The ``validate.outputs`` job's typed result: what was compared, on what, and the verdict the
CLI's exit code and the Validate panel's headline both come from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, Result, Verdict, judged
from deploylens.core.validate.records import LayerResult, Layerwise, OutputComparison
from deploylens.core.validate.tolerances import Tolerances

KIND = "deploylens.validation"
RESULT_VERSION = 1


@dataclass
class ValidationResult(Result):
    """ONNX Runtime's outputs against a reference's on the same inputs (and, asked for, every
    mapped intermediate tensor)."""

    model: str
    reference: str  # "PyTorch eager" | "ONNX Runtime, graph optimizations off"
    candidate: str
    inputs: dict[str, list[int]]  # input name → shape of the first batch
    inputs_used: str  # a sentence: which samples, batches or seeded random inputs
    batches: int
    samples: int
    notes: list[str]
    seed: int | None  # None when the inputs came from a file
    inputs_file: str
    preprocess: str
    tolerances: Tolerances
    outputs: list[OutputComparison]
    passed: bool  # every output within tolerance and paired: what the exit code says
    layerwise: Layerwise | None = None
    problems: list[str] = field(default_factory=list)  # outputs that do not line up
    paired: str = ""  # how outputs were paired: "by name" | "by position"
    seconds: float = 0.0
    kind: str = KIND
    version: int = RESULT_VERSION

    def verdict(self) -> Verdict:
        """The one verdict the CLI's exit code, its first line and the panel's headline show:
        FAIL (exit 1) where an output differs or does not line up; INCONCLUSIVE (exit 3) where
        nothing was compared, or the only outputs not passing had nothing to compare (all zero
        or all NaN on both sides), or a layer-wise run asked for compared no tensor; a PASS
        above a layer that differs says both — never a bare PASS above a diverging node."""
        numbered = [o for o in self.outputs if o.values and not o.inconclusive]
        evidence = Evidence(
            len(numbered),
            "output(s) compared",
            "" if self.outputs else "no output of the model was paired with the reference's",
        )
        unmatched = [o for o in self.outputs if o.inconclusive]
        failed = self.problems or any(not o.passed and not o.inconclusive for o in self.outputs)
        if failed or (not self.passed and self.outputs and not unmatched):
            return judged(evidence, "FAIL", "fail")
        if unmatched:
            said = replace(evidence, missing=f"{unmatched[0].name}: {unmatched[0].reason}")
            return Verdict("INCONCLUSIVE", "warn", EXIT_INCONCLUSIVE, said)
        if not evidence.count:
            return judged(evidence, "PASS", "pass")  # the rule's INCONCLUSIVE, with its reason
        lw = self.layerwise
        if lw is not None and not lw.compared:
            return Verdict(
                "PASS (outputs) — LAYER-WISE INCONCLUSIVE: no intermediate tensor was compared",
                "warn",
                EXIT_INCONCLUSIVE,
                Evidence(0, "intermediate tensor(s) compared", "no tensor could be mapped"),
            )
        if self.first_diverging is not None:
            return judged(evidence, "PASS (outputs) — LAYERS DIFFER", "warn")
        return judged(evidence, "PASS", "pass")

    @property
    def first_diverging(self) -> LayerResult | None:
        return self.layerwise.first_diverging if self.layerwise is not None else None

    def node_errors(self, metric: str = "rel_l2") -> dict[str, float]:
        """``{onnx node name: error}`` for the graph overlay (max over the node's tensors)."""
        errors: dict[str, float] = {}
        for layer in self.layerwise.layers if self.layerwise is not None else []:
            value = getattr(layer, metric)
            if isinstance(value, int | float) and value == value:  # not NaN
                errors[layer.node] = max(errors.get(layer.node, 0.0), float(value))
        return errors

    def summary(self) -> str:
        """The result as the CLI prints it."""
        tol = self.tolerances
        lines = [
            f"{self.verdict().word}: {self.candidate} vs {self.reference} on {self.model}",
            "  inputs: "
            + ", ".join(f"{k} {v}" for k, v in self.inputs.items())
            + (f" — {self.inputs_used}" if self.inputs_used else ""),
            *(f"  note: {note}" for note in self.notes),
            *(f"✗ {problem}" for problem in self.problems),
            f"  {'output':24s} {'max abs':>10s} {'mean abs':>10s} {'max rel':>10s} "
            f"{'cosine':>9s} {'within':>8s} {'NaN':>5s}",
        ]
        for o in self.outputs:
            lines.append(
                f"{'✓' if o.passed else '✗'} {o.name[:24]:24s} {o.max_abs:10.3g} "
                f"{o.mean_abs:10.3g} {o.max_rel:10.3g} {o.cosine:9.6f} "
                f"{within_text(o.within):>8s} {o.nan:5d}" + (f"  {o.reason}" if o.reason else "")
            )
        rel_l2 = tol.rel_l2 or "max(0.01, rtol)"
        lines.append(
            f"  tolerances: rtol {per_output_text(tol.rtol)}, atol {per_output_text(tol.atol)} "
            f"({tol.statistic}); "
            "an element fails only when both abs and rel exceed; NaN fails; "
            f"an output also fails when its rel L2 exceeds {rel_l2}; "
            "one that is (essentially) zero on both sides is inconclusive"
        )
        if self.layerwise is not None:
            lines.extend(layerwise_text(self.layerwise))
        return "\n".join(lines)


def per_output_text(values: dict[str, float]) -> str:
    """``{'': 1e-4, 'logits': 1e-3}`` as a person writes it: ``0.0001 (logits 0.001)``."""
    default = values.get("")
    named = ", ".join(f"{k} {v:g}" for k, v in values.items() if k)
    text = f"{default:g}" if default is not None else ""
    if named:
        text = f"{text} ({named})" if text else named
    return text


def layerwise_text(lw: Layerwise, top: int = 8) -> list[str]:
    lines = [
        f"  layer-wise ({lw.mode}, mapping: {lw.mapping}"
        + (f", on {lw.inputs_used}" if lw.inputs_used else "")
        + f"): {lw.compared} tensors compared in {lw.chunks} chunk(s) of ≤ {lw.budget_mb:.0f} MB, "
        f"{len(lw.unmapped)} module call(s) unmapped, {lw.seconds:.2f} s"
    ]
    first = lw.first_diverging
    if first is not None:
        where = f" (module {first.module})" if first.module else ""
        lines.append(
            f"  first diverging node: {first.node} [{first.op_type}]{where}: "
            f"max abs {first.max_abs:.3g}, rel L2 {first.rel_l2:.3g}"
        )
    elif lw.compared:
        lines.append("  no intermediate tensor diverges")
    else:
        lines.append("  no intermediate tensor was compared: layer-wise shows nothing")
    ranked = sorted(
        (layer for layer in lw.layers if layer.jump == layer.jump), key=lambda layer: -layer.jump
    )[:top]
    if ranked and ranked[0].jump > 0:
        lines.append(f"  where the error grows most (rel L2 out − in), top {len(ranked)}:")
        for layer in ranked:
            lines.append(
                f"    {layer.node[:40]:40s} {layer.op_type:18s} "
                f"in {layer.error_in:9.3g} → out {layer.rel_l2:9.3g}"
            )
    for item in lw.unmapped[:top]:
        lines.append(f"  unmapped {item.module}: {item.reason}")
    if len(lw.unmapped) > top:
        lines.append(f"  … and {len(lw.unmapped) - top} more unmapped (see --json)")
    return lines


def within_text(share: float) -> str:
    """The share of elements within tolerance, rounded down: 0.99996 is "99.99 %", never the
    "100.00 %" a failing output showed."""
    if share != share:  # NaN
        return "—"
    if share >= 1.0:
        return "100 %"
    return f"{math.floor(share * 10000) / 100:.2f} %"
