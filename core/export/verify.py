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
from deploylens.core.pytorch.outputs import flatten, to_numpy_list

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
    except UserError as exc:  # onnxruntime missing, a custom op with no reference
        return OrtSmoke(False, exc.message, unavailable=True)
    except Exception as exc:
        message = _first_line(exc)
        return OrtSmoke(
            False, f"ONNX Runtime refused the file: {message}", unavailable=_lacks(message)
        )
    try:
        feeds = _feeds(session, inputs, input_names)
        got = session.run(None, feeds)
    except Exception as exc:
        message = _first_line(exc)
        return OrtSmoke(False, message, unavailable=_lacks(message))
    names = [o.name for o in session.get_outputs()]
    smoke = agreement(names, list(got), flatten(expected))
    smoke.outputs, smoke.via = len(got), via
    return smoke


# ONNX Runtime's words for "this build has no kernel for it": nothing said of the file
LACKS = ("NOT_IMPLEMENTED", "Could not find an implementation", "is not a registered function/op")


def _lacks(message: str) -> bool:
    """Whether ONNX Runtime failed for want of a kernel (the check could not run) rather than
    on the file itself (a shape or type the exported graph cannot take)."""
    return any(word in message for word in LACKS)


def _first_line(exc: BaseException) -> str:
    from deploylens.core.errors import ort_error_text

    if (type(exc).__module__ or "").startswith("onnxruntime"):
        return ort_error_text(exc)
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _feeds(session: Any, inputs: tuple[Any, ...], input_names: list[str]) -> dict[str, Any]:
    """The export's example inputs by the ONNX file's input names: by the names given to the
    exporter where the file kept them (an exporter drops inputs the graph never reads), else
    by position."""
    arrays = to_numpy_list(inputs)
    given = dict(zip(input_names, arrays, strict=False))
    names = [i.name for i in session.get_inputs()]
    if all(name in given for name in names):
        return {name: given[name] for name in names}
    return dict(zip(names, arrays, strict=False))


def agreement(names: list[str], got: list[Any], want: list[tuple[str, Any]]) -> OrtSmoke:
    """Whether ONNX Runtime's outputs are PyTorch's, judged as Validate judges them: outputs
    paired by name or position, detections as sets, element tolerances and the scale-aware
    rel L2 (``validate.pairing``) — one function, so an export and a validation of the same
    model cannot disagree."""
    from deploylens.core.validate.pairing import OutputsComparator
    from deploylens.core.validate.tolerances import Tolerances

    tolerances = Tolerances()
    outputs = OutputsComparator(names, tolerances)
    outputs.add(got, [(path, np.asarray(value)) for path, value in want])
    results = outputs.results()
    problems = [f"{c.name}: {c.reason or 'outside the tolerances'}" for c in results
                if not c.passed and not c.inconclusive]  # fmt: skip
    problems += outputs.structure_problems()
    inconclusive = [c for c in results if c.inconclusive]
    diffs = [c.max_abs for c in results if not c.inconclusive and c.max_abs == c.max_abs]
    finite = [d for d in diffs if np.isfinite(d)]
    return OrtSmoke(
        ok=True,
        agrees=bool(results) and not problems and not inconclusive,
        compared=len(results),
        disagreements=problems,
        max_abs_diff=max(finite) if finite and len(finite) == len(diffs) else None,
        tolerances=tolerances,
        inconclusive=[f"{c.name}: {c.reason}" for c in inconclusive] if not problems else [],
        notes=outputs.notes,
    )
