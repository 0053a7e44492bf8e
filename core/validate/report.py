"""A validation result as text (CLI, demo)."""

from __future__ import annotations

from typing import Any


def validation_text(result: dict[str, Any]) -> str:
    lines = [
        f"{'PASS' if result['passed'] else 'FAIL'}: {result['candidate']} vs "
        f"{result['reference']} on {result['model']}",
        "  inputs: " + ", ".join(f"{k} {v}" for k, v in result["inputs"].items()),
        f"  {'output':24s} {'max abs':>10s} {'mean abs':>10s} {'max rel':>10s} "
        f"{'cosine':>9s} {'within':>8s} {'NaN':>5s}",
    ]
    for o in result["outputs"]:
        mark = "✓" if o["passed"] else "✗"
        lines.append(
            f"{mark} {o['name'][:24]:24s} {o['max_abs']:10.3g} {o['mean_abs']:10.3g} "
            f"{o['max_rel']:10.3g} {o['cosine']:9.6f} {o['within']:8.2%} {o['nan']:5d}"
            + (f"  {o['reason']}" if o["reason"] else "")
        )
    tol = result["tolerances"]
    lines.append(
        f"  tolerances: rtol {tol['rtol']}, atol {tol['atol']} ({tol['statistic']}); "
        "an element fails only when both abs and rel exceed; NaN fails"
    )
    return "\n".join(lines)
