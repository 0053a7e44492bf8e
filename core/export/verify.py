"""Post-export truth: what the exporter really wrote, whether it is valid, and whether ONNX
Runtime computes what torch computed (custom ops through plugins' reference implementations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core.export.diagnose import Finding
from deploylens.core.export.result import ExportResult, OrtSmoke
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
    report: ExportResult,
) -> None:
    """Fill ``report``'s checks: the opsets written, onnx.checker, ONNX Runtime's smoke test
    (an invalid model is a finding, never a silent success)."""
    model = onnx.load(path, load_external_data=False)
    opsets = {domain_name(o.domain): o.version for o in model.opset_import}
    actual = opsets.get("ai.onnx")
    report.requested_opset, report.actual_opset = requested, actual
    report.opsets, report.nodes = opsets, len(model.graph.node)
    if requested is not None and actual is not None and actual != requested:
        raised = exporter == "dynamo" and requested < DYNAMO_MIN_OPSET
        report.warnings.append(
            f"requested opset {requested}, the {exporter} exporter wrote {actual}"
            + (" (it raises requests below 18 to 18)" if raised else "")
        )
    try:
        onnx.checker.check_model(path, full_check=True)
        report.checker = "ok"
    except Exception as exc:  # an invalid model is a finding, never a silent success
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        report.checker = message
        report.findings.append(
            Finding(
                "invalid_model",
                exporter,
                actual,
                f"the exporter wrote a model onnx.checker rejects: {message}",
            )
        )
        return
    custom = {d for d in opsets if d not in ("ai.onnx", "ai.onnx.ml")}
    report.ort = _ort_smoke(model, Path(path), custom, inputs, input_names, expected, plugins)


def _ort_smoke(
    model: onnx.ModelProto,
    path: Path,
    custom: set[str],
    inputs: tuple[Any, ...],
    input_names: list[str],
    expected: Any,
    plugins: list[OpPlugin],
) -> OrtSmoke:
    from deploylens.core.errors import UserError

    try:
        session, via = plugin_session(path, plugins, custom=custom)
        names = [i.name for i in session.get_inputs()]
        feeds = {name: array for name, array in zip(names, to_numpy_list(inputs), strict=False)}
        got = session.run(None, feeds)
    except UserError as exc:
        return OrtSmoke(False, exc.message)
    except Exception as exc:
        return OrtSmoke(False, str(exc).strip().splitlines()[0][:300])
    want = to_numpy_list(expected)
    names = [o.name for o in session.get_outputs()]
    smoke = agreement(names, list(got), want)
    smoke.outputs, smoke.via = len(got), via
    return smoke


def agreement(names: list[str], got: list[Any], want: list[Any]) -> OrtSmoke:
    """Whether ONNX Runtime's outputs are PyTorch's, judged as Validate judges them (element
    tolerances and the scale-aware rel L2, ``validate.compare``): the smoke test said "ok" for
    any difference at all, and a NaN or a shape mismatch hid behind ``max``."""
    from deploylens.core.validate.compare import compare, judge_scale
    from deploylens.core.validate.tolerances import Tolerances

    tolerances = Tolerances()
    problems: list[str] = []
    diffs: list[float] = []
    if len(got) != len(want):
        problems.append(f"{len(got)} outputs where PyTorch gave {len(want)}")
    for name, g, w in zip(names, got, want, strict=False):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            problems.append(f"{name}: shape {list(g.shape)} where PyTorch gave {list(w.shape)}")
            continue
        if not g.size:
            continue
        c = compare(name, g.astype(np.float64), w.astype(np.float64), tolerances)
        judge_scale(c, tolerances)
        diffs.append(c.max_abs)
        if not c.passed:
            problems.append(f"{name}: {c.reason or 'outside the tolerances'}")
    finite = [d for d in diffs if np.isfinite(d)]
    return OrtSmoke(
        ok=True,
        agrees=not problems,
        disagreements=problems,
        max_abs_diff=max(finite) if len(finite) == len(diffs) and finite else None,
        tolerances=tolerances,
    )
