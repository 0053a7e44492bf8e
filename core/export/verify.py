"""Post-export truth: what the exporter really wrote, whether it is valid, and whether ONNX
Runtime computes what torch computed (custom ops through plugins' reference implementations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core.export.diagnose import Finding
from deploylens.core.model.domains import domain_name
from deploylens.core.ort_session import plugin_session
from deploylens.core.plugin_api import OpPlugin
from deploylens.core.pytorch.outputs import to_numpy_list

DYNAMO_MIN_OPSET = 18


def verify_export(
    path: str,
    exporter: str,
    requested: int | None,
    inputs: tuple[Any, ...],
    input_names: list[str],
    expected: Any,
    plugins: list[OpPlugin],
) -> dict[str, Any]:
    model = onnx.load(path, load_external_data=False)
    opsets = {domain_name(o.domain): o.version for o in model.opset_import}
    actual = opsets.get("ai.onnx")
    report: dict[str, Any] = {
        "requested_opset": requested,
        "actual_opset": actual,
        "opsets": opsets,
        "nodes": len(model.graph.node),
        "warnings": [],
        "findings": [],
    }
    if requested is not None and actual is not None and actual != requested:
        raised = exporter == "dynamo" and requested < DYNAMO_MIN_OPSET
        report["warnings"].append(
            f"requested opset {requested}, the {exporter} exporter wrote {actual}"
            + (" (it raises requests below 18 to 18)" if raised else "")
        )
    try:
        onnx.checker.check_model(path, full_check=True)
        report["checker"] = "ok"
    except Exception as exc:  # an invalid model is a finding, never a silent success
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        report["checker"] = message
        report["findings"].append(
            Finding(
                "invalid_model",
                exporter,
                actual,
                f"the exporter wrote a model onnx.checker rejects: {message}",
            ).to_dict()
        )
        return report
    custom = {d for d in opsets if d not in ("ai.onnx", "ai.onnx.ml")}
    report["ort"] = _ort_smoke(model, Path(path), custom, inputs, input_names, expected, plugins)
    return report


def _ort_smoke(
    model: onnx.ModelProto,
    path: Path,
    custom: set[str],
    inputs: tuple[Any, ...],
    input_names: list[str],
    expected: Any,
    plugins: list[OpPlugin],
) -> dict[str, Any]:
    from deploylens.core.errors import UserError

    try:
        session, via = plugin_session(path, plugins, custom=custom)
        names = [i.name for i in session.get_inputs()]
        feeds = {name: array for name, array in zip(names, to_numpy_list(inputs), strict=False)}
        got = session.run(None, feeds)
    except UserError as exc:
        return {"ok": False, "reason": exc.message}
    except Exception as exc:
        return {"ok": False, "reason": str(exc).strip().splitlines()[0][:300]}
    want = to_numpy_list(expected)
    diffs = [
        float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
        if g.shape == w.shape and g.size
        else float("nan")
        for g, w in zip(got, want, strict=False)
    ]
    return {
        "ok": True,
        "max_abs_diff": max(diffs) if diffs else None,
        "outputs": len(got),
        "via": via,
    }
