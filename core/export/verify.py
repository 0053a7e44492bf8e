"""Post-export truth: what the exporter really wrote, whether it is valid, and whether ONNX
Runtime computes what torch computed (custom ops through plugins' reference implementations)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core.export.diagnose import Finding
from deploylens.core.export.plugin_api import ORT_PYOP_DOMAIN, OpPlugin
from deploylens.core.support.onnx_spec import domain_name

DYNAMO_MIN_OPSET = 18
_REGISTERED: set[str] = set()  # plugins whose reference PyOps this process registered


def to_numpy_list(value: Any) -> list[np.ndarray]:
    """Torch outputs (tensor, tuple, nested lists) as a flat list of arrays, in output order."""
    if isinstance(value, list | tuple):
        return [a for v in value for a in to_numpy_list(v)]
    return [value.detach().cpu().numpy()] if hasattr(value, "detach") else [np.asarray(value)]


def _rewrite_domains(model: onnx.ModelProto, rewrite: dict[str, str]) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in copy.graph.node:
        if node.domain in rewrite:
            node.domain = rewrite[node.domain]
    kept = [o for o in copy.opset_import if o.domain not in rewrite]
    del copy.opset_import[:]
    copy.opset_import.extend(kept)
    if ORT_PYOP_DOMAIN not in {o.domain for o in kept}:
        copy.opset_import.append(onnx.helper.make_opsetid(ORT_PYOP_DOMAIN, 1))
    return copy


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


def session_options(optimized: bool = True, extensions: bool = False) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if extensions:
        from onnxruntime_extensions import get_library_path

        options.register_custom_ops_library(get_library_path())
    return options


def custom_domains(model: onnx.ModelProto) -> set[str]:
    return {domain_name(o.domain) for o in model.opset_import} - {"ai.onnx", "ai.onnx.ml"}


def prepare_for_ort(
    model: onnx.ModelProto, plugins: list[OpPlugin], custom: set[str] | None = None
) -> tuple[onnx.ModelProto, bool]:
    """Custom-domain ops rewritten to the plugins' reference PyOps (registered once per process).

    Returns (model, needs onnxruntime-extensions); the model is returned as is without custom ops.
    """
    from deploylens.core.errors import UserError

    custom = custom_domains(model) if custom is None else custom
    if not custom:
        return model, False
    rewrite: dict[str, str] = {}
    for plugin in plugins:
        rewrite.update(plugin.ort_domain_rewrite)
    missing = custom - set(rewrite)
    if missing:
        raise UserError(
            f"custom domain(s) {sorted(missing)} have no ONNX Runtime "
            "implementation: apply a plugin with a reference implementation"
        )
    for plugin in plugins:
        if plugin.register_ort_reference is not None and plugin.name not in _REGISTERED:
            plugin.register_ort_reference()  # once per process: ORT refuses a second time
            _REGISTERED.add(plugin.name)
    return _rewrite_domains(model, rewrite), True


def plugin_session(
    path: str | Path,
    plugins: list[OpPlugin],
    optimized: bool = True,
    custom: set[str] | None = None,
) -> tuple[Any, str]:
    """An ONNX Runtime session; custom-domain ops run through plugins' reference PyOps on a
    domain-rewritten copy. Returns (session, how) and raises ``UserError`` when it cannot."""
    import onnxruntime as ort

    from deploylens.core.errors import UserError

    target, via = str(path), ""
    if custom is None:
        custom = custom_domains(onnx.load(str(path), load_external_data=False))
    extensions = False
    if custom:
        rewritten, extensions = prepare_for_ort(onnx.load(str(path)), plugins, custom)
        handle, target = tempfile.mkstemp(suffix=".onnx", prefix="deploylens-validate-")
        os.close(handle)
        onnx.save(rewritten, target)
        via = f"reference implementations, domains rewritten to {ORT_PYOP_DOMAIN} on a copy"
    options = session_options(optimized, extensions)
    try:
        return ort.InferenceSession(target, options, providers=["CPUExecutionProvider"]), via
    except Exception as exc:
        raise UserError(
            f"ONNX Runtime cannot load {Path(path).name}: {str(exc).strip().splitlines()[0][:300]}"
        ) from None
    finally:
        if via:  # the session holds the model in memory; the rewritten copy is not needed
            Path(target).unlink(missing_ok=True)


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
