"""Edited vs original on the same seeded inputs through ONNX Runtime (custom nodes through the
plugins' reference implementations): the check that a rewrite kept the numbers."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core.surgery.result import SurgeryCompare, TensorCheck

ATOL = RTOL = 1e-5


def _with_outputs(
    path: str | Path, names: list[str], scratch: Path, tag: str, fallback: dict[str, Any]
) -> tuple[Path, dict[str, Any]]:
    """A copy of the model that also outputs ``names``, typed by shape inference — or, past a
    custom node inference cannot see through, by the other model's type for that name."""
    model = onnx.load(str(path))
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    typed = {v.name: v for v in inferred.graph.value_info}
    present = {o.name for o in model.graph.output}
    for name in names:
        value = typed.get(name) or fallback.get(name)
        if value is not None and name not in present:
            model.graph.output.append(value)
    out = scratch / f"{tag}.layers.onnx"  # weights inline: fine below 2 GB
    onnx.save(model, out)
    return out, typed


def shared_tensors(original: onnx.ModelProto, edited: onnx.ModelProto) -> list[str]:
    """Intermediate tensors both graphs compute under one name, in the edited graph's order:
    what a rewrite kept, so where it starts to differ can be found."""
    made = {t for n in original.graph.node for t in n.output}
    finals = {o.name for o in edited.graph.output}
    ordered = [t for n in edited.graph.node for t in n.output if t in made and t not in finals]
    return list(dict.fromkeys(t for t in ordered if t))


def compare_models(
    original: str | Path,
    edited: str | Path,
    plugins: list[Any],
    seed: int = 0,
    atol: float = ATOL,
    rtol: float = RTOL,
    layers: bool = True,
    inputs: str = "",
) -> SurgeryCompare:
    """Per shared output: max abs and max rel error, and whether every element is within
    ``atol + rtol·|reference|``; with ``layers``, every inner tensor both compute too. An edited
    model whose inputs are tensors of the original (an extraction) is fed the original's values
    of them. Not comparable (said, never passed) when its inputs are not the original's."""
    from deploylens.core.ort_session import plugin_session, run_feeds

    a_model = onnx.load(str(original), load_external_data=False)
    b_model = onnx.load(str(edited), load_external_data=False)
    a_inputs = {i.name for i in a_model.graph.input} - {i.name for i in a_model.graph.initializer}
    b_inputs = {i.name for i in b_model.graph.input} - {i.name for i in b_model.graph.initializer}
    computed = {t for n in a_model.graph.node for t in n.output} | a_inputs
    if not b_inputs <= computed:
        return SurgeryCompare(
            comparable=False,
            passed=None,
            reason=f"the edited model reads {sorted(b_inputs - computed)}, which the original "
            "does not compute",
        )
    a_finals = {o.name for o in a_model.graph.output}
    b_finals = [o.name for o in b_model.graph.output]
    inner = shared_tensors(a_model, b_model) if layers else []
    fetch = [*inner, *(n for n in b_finals if n not in a_finals), *sorted(b_inputs - a_inputs)]
    with tempfile.TemporaryDirectory(prefix="deploylens-surgery-") as scratch:
        a_path, b_path = Path(original), Path(edited)
        types: dict[str, Any] = {}
        if fetch:
            a_path, types = _with_outputs(original, fetch, Path(scratch), "a", {})
        if inner:
            b_path, _ = _with_outputs(edited, inner, Path(scratch), "b", types)
        a_session, _ = plugin_session(a_path, plugins, optimized=False)
        b_session, via = plugin_session(b_path, plugins, optimized=False)
    a_names = [x.name for x in a_session.get_outputs()]
    missing = sorted(b_inputs - a_inputs - set(a_names))
    if missing:
        return SurgeryCompare(
            comparable=False,
            passed=None,
            reason=f"the original's values of {missing} cannot be read (type unknown)",
        )
    from deploylens.core.data.feeds import make_feeds

    feeds = make_feeds(a_session, inputs, seed=seed)  # the user's, else validate's seeded ones
    given = Path(inputs).name if inputs else ""
    a_out = dict(zip(a_names, run_feeds(a_session, feeds, original, given, a_names), strict=True))
    b_feeds = {n: feeds[n] if n in a_inputs else a_out[n] for n in b_inputs}
    shared = [o.name for o in b_session.get_outputs() if o.name in a_out]
    finals = [n for n in b_finals if n in a_out]
    uncompared = [n for n in b_finals if n not in a_out]
    if not finals:
        return SurgeryCompare(comparable=False, passed=None, reason="no output name in common")
    b_out = dict(zip(shared, run_feeds(b_session, b_feeds, edited, given, shared), strict=True))
    rows = [_row(n, a_out[n], b_out[n], atol, rtol) for n in finals]
    layer_rows = [_row(n, a_out[n], b_out[n], atol, rtol, layer=True) for n in inner if n in b_out]
    first = next((r.output for r in layer_rows if not r.passed), None)
    matched = all(r.passed for r in rows)
    return SurgeryCompare(
        comparable=True,
        # an output the original has no tensor for was not checked: never a PASS over it
        passed=False if not matched else (None if uncompared else True),
        uncompared=uncompared,
        reason=f"no original tensor for output(s) {uncompared}" if uncompared else "",
        outputs=rows,
        layers=layer_rows,
        first_diverging=first,
        fed_from_original=sorted(b_inputs - a_inputs),
        atol=atol,
        rtol=rtol,
        seed=seed,
        via=via,
    )


def _row(name: str, a: Any, b: Any, atol: float, rtol: float, layer: bool = False) -> TensorCheck:
    """One tensor, judged by validate's own verdict (element check, then the scale-aware
    relative check): the CLI, the Validate panel and the Surgery banner agree by construction.
    An inner tensor (``layer``) that is all zero on both sides is agreement, not a verdict on
    the model: a mask or a padding is often zero."""
    from deploylens.core.validate.compare import compare, judge_scale
    from deploylens.core.validate.tolerances import Tolerances

    tolerances = Tolerances(rtol={"": rtol}, atol={"": atol})
    ref, got = np.asarray(a), np.asarray(b)
    result = compare(name, got, ref, tolerances)
    judge_scale(result, tolerances)
    if layer and result.reason.startswith("inconclusive"):
        result.passed, result.reason = bool(result.max_abs == 0), ""
    row = TensorCheck(name, bool(result.passed), result.reason)
    if ref.shape == got.shape:
        row.max_abs = float(np.nan_to_num(result.max_abs, nan=0.0))
        row.max_rel = float(np.nan_to_num(result.max_rel, nan=0.0))
        row.rel_l2 = float(result.rel_l2)
    return row
