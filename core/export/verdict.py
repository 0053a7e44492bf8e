"""One verdict for an export, shared by ``deploylens export`` (its exit status and first line)
and the Export panel (its banner): written and agreeing with PyTorch passes; written but not
checked warns; not written, or written but computing other numbers, fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PASS, WARN, FAIL = "pass", "warn", "fail"


def export_verdict(result: dict[str, Any]) -> tuple[str, str]:
    """``(PASS | WARN | FAIL, the sentence that says why)``."""
    exporter = result["settings"]["exporter"]
    if not result["ok"]:
        count = len(result.get("findings", []))
        fixes = f": {count} finding(s), each with its fixes" if count else ""
        return FAIL, f"Export FAILED with the {exporter} exporter{fixes}."
    written = f"Exported {Path(result['path']).name} (opset {result['actual_opset']})"
    ort = result.get("ort") or {}
    if not ort.get("ok"):
        reason = ort.get("reason") or "the checker stopped first"
        return WARN, f"{written}, but ONNX Runtime's smoke test did not run: {reason}."
    if not ort.get("agrees", True):
        first = (ort.get("disagreements") or ["outside the tolerances"])[0]
        return FAIL, f"{written}, but ONNX Runtime's outputs DIFFER from PyTorch's: {first}."
    worst = ort.get("max_abs_diff")
    how = f" (max |Δ| {worst:.3g})" if isinstance(worst, float) else ""
    return PASS, f"{written}; ONNX Runtime's outputs agree with PyTorch's{how}."


def exit_status(result: dict[str, Any]) -> int:
    return 1 if export_verdict(result)[0] == FAIL else 0
