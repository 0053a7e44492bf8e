"""The live TensorRT parser's answer (``support.tensorrt_probe``) as a ``TargetReport``, so the
panel lists it, paints it on the graph and counts its blockers exactly like a table target."""

from __future__ import annotations

from typing import Any

from deploylens.core.support.analysis import Blocker, TargetReport
from deploylens.core.support.fixes import Fix


def live_report(target: str, result: dict[str, Any], model_opset: int) -> TargetReport:
    """One blocker per finding (its node, the parser's sentence, the fix it names)."""
    blockers = []
    for finding in result.get("findings", []):
        fixes = []
        if finding.get("fix"):
            kind = "plugin" if "plugin" in finding["fix"] else "opset"
            fixes.append(Fix(4 if kind == "plugin" else 1, kind, finding["fix"], step=1))
        name = finding.get("node_name") or ""
        blockers.append(
            Blocker(
                op=finding.get("op") or "(model)",
                count=1 if name else 0,
                nodes=[name] if name else [],
                reason=f"{finding['message']} [{finding['code']}]",
                fixes=fixes,
            )
        )
    product = f"{result.get('product', 'TensorRT')} {result.get('version', '')}".strip()
    return TargetReport(
        target=f"{target} ({product}, live parser)",
        ok=bool(result.get("supported")),
        blockers=blockers,
        opset_range=None,
        model_opset=model_opset,
        notes=[f"answered by the installed parser ({result.get('api', '')})"],
    )
