"""The live TensorRT parser's answer (``support.tensorrt_probe``) as a ``TargetReport``, so the
panel lists it, paints it on the graph and counts its blockers exactly like a table target."""

from __future__ import annotations

from deploylens.core.support.analysis import Blocker, TargetReport
from deploylens.core.support.fixes import Fix
from deploylens.core.support.measured_types import Prediction
from deploylens.core.support.result import ParserProbe


def live_report(target: str, result: ParserProbe, model_opset: int) -> TargetReport:
    """One blocker per finding (its node, the parser's sentence, the fix it names)."""
    blockers = []
    for finding in result.findings:
        fixes = []
        if finding.fix:
            kind = "plugin" if "plugin" in finding.fix else "opset"
            fixes.append(Fix(4 if kind == "plugin" else 1, kind, finding.fix, step=1))
        name = finding.node_name
        blockers.append(
            Blocker(
                op=finding.op or "(model)",
                count=1 if name else 0,
                nodes=[name] if name else [],
                reason=f"{finding.message} [{finding.code}]",
                fixes=fixes,
            )
        )
    return TargetReport(
        target=f"{target} ({result.product} {result.version}, live parser)",
        ok=result.supported,
        blockers=blockers,
        opset_range=None,
        model_opset=model_opset,
        notes=[f"answered by the installed parser ({result.api})"],
        nodes=result.nodes,
    )


def measured_report(target: str, found: Prediction, model_opset: int) -> TargetReport:
    """A prediction from the measured cells (``measure.verdict``) as a ``TargetReport``: one
    blocker per failing node with the library's own words; a node with no measured cell is a
    blocker too ("not measured"), so an inconclusive prediction is never shown as OK."""
    blockers = [
        Blocker(
            op=_op_of(node.cell),
            count=1,
            nodes=[node.node],
            reason=f"{node.state} in its measured cell {node.cell}: {node.message}"[:400],
        )
        for node in found.blocked
    ] + [
        Blocker(
            op=_op_of(node.cell),
            count=1,
            nodes=[node.node],
            reason=f"not measured ({node.cell}"
            + (f": {node.message}" if node.message else "")
            + "): ask the live parser",
        )
        for node in found.not_measured
    ]
    notes = [f"predicted from the {found.source}, without a parse"]
    if found.ok is None:
        notes.append(f"inconclusive: {len(found.not_measured)} node(s) have no measured cell")
    return TargetReport(
        target=f"{target} (predicted from measured cells)",
        ok=bool(found.ok),
        blockers=blockers,
        opset_range=None,
        model_opset=model_opset,
        notes=notes,
        inconclusive=found.ok is None,
        nodes=found.nodes - len(found.not_measured),
    )


def _op_of(cell: str) -> str:
    """The op of a cell key (``ai.onnx::Mod::13::float@…``); ``(model)`` for a whole-model
    problem (``measure.model_problems``), whose cell is ``model``."""
    parts = cell.split("::")
    return parts[1] if len(parts) > 1 else "(model)"
