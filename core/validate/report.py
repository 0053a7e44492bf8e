"""A validation result as text (CLI, demo)."""

from __future__ import annotations

import math
from typing import Any


def verdict(result: dict[str, Any]) -> tuple[str, str]:
    """(headline word, severity "pass" | "warn" | "fail"). Outputs decide the exit code; when
    they agree but layer-wise found a diverging intermediate, the headline says both — never a
    bare PASS above a "first diverging node"."""
    first = (result.get("layerwise") or {}).get("first_diverging")
    if not result["passed"]:
        return "FAIL", "fail"
    if first:
        return "PASS (outputs) — LAYERS DIFFER", "warn"
    return "PASS", "pass"


def validation_text(result: dict[str, Any]) -> str:
    lines = [
        f"{verdict(result)[0]}: {result['candidate']} vs {result['reference']} on "
        f"{result['model']}",
        "  inputs: "
        + ", ".join(f"{k} {v}" for k, v in result["inputs"].items())
        + (f" — {result['inputs_used']}" if result.get("inputs_used") else ""),
        *(f"  note: {note}" for note in result.get("notes", [])),
        f"  {'output':24s} {'max abs':>10s} {'mean abs':>10s} {'max rel':>10s} "
        f"{'cosine':>9s} {'within':>8s} {'NaN':>5s}",
    ]
    for o in result["outputs"]:
        mark = "✓" if o["passed"] else "✗"
        lines.append(
            f"{mark} {o['name'][:24]:24s} {o['max_abs']:10.3g} {o['mean_abs']:10.3g} "
            f"{o['max_rel']:10.3g} {o['cosine']:9.6f} {within_text(o['within']):>8s} {o['nan']:5d}"
            + (f"  {o['reason']}" if o["reason"] else "")
        )
    tol = result["tolerances"]
    rel_l2 = tol.get("rel_l2") or "max(0.01, rtol)"
    lines.append(
        f"  tolerances: rtol {tol['rtol']}, atol {tol['atol']} ({tol['statistic']}); "
        "an element fails only when both abs and rel exceed; NaN fails; "
        f"and an output fails when its rel L2 exceeds {rel_l2} or both sides are below atol"
    )
    if result.get("layerwise"):
        lines.extend(layerwise_text(result["layerwise"]))
    return "\n".join(lines)


def layerwise_text(lw: dict[str, Any], top: int = 8) -> list[str]:
    lines = [
        f"  layer-wise ({lw['mode']}, mapping: {lw['mapping']}"
        + (f", on {lw['inputs_used']}" if lw.get("inputs_used") else "")
        + f"): {lw['compared']} tensors "
        f"compared in {lw['chunks']} chunk(s) of ≤ {lw['budget_mb']:.0f} MB, "
        f"{len(lw['unmapped'])} module call(s) unmapped, {lw['seconds']:.2f} s"
    ]
    first = lw.get("first_diverging")
    if first:
        where = f" (module {first['module']})" if first["module"] else ""
        lines.append(
            f"  first diverging node: {first['node']} [{first['op_type']}]{where}: "
            f"max abs {first['max_abs']:.3g}, rel L2 {first['rel_l2']:.3g}"
        )
    else:
        lines.append("  no intermediate tensor diverges")
    ranked = sorted(
        (layer for layer in lw["layers"] if layer["jump"] == layer["jump"]),
        key=lambda layer: -layer["jump"],
    )[:top]
    if ranked and ranked[0]["jump"] > 0:
        lines.append(f"  where the error grows most (rel L2 out − in), top {len(ranked)}:")
        for layer in ranked:
            lines.append(
                f"    {layer['node'][:40]:40s} {layer['op_type']:18s} "
                f"in {layer['error_in']:9.3g} → out {layer['rel_l2']:9.3g}"
            )
    for item in lw["unmapped"][:top]:
        lines.append(f"  unmapped {item['module']}: {item['reason']}")
    if len(lw["unmapped"]) > top:
        lines.append(f"  … and {len(lw['unmapped']) - top} more unmapped (see --json)")
    return lines


def within_text(share: float) -> str:
    """The share of elements within tolerance, rounded down: 0.99996 is "99.99 %", never the
    "100.00 %" a failing output showed."""
    if share != share:  # NaN
        return "—"
    if share >= 1.0:
        return "100 %"
    return f"{math.floor(share * 10000) / 100:.2f} %"
