"""ONNX Runtime sessions for models that may hold custom-domain ops: those run through the op
plugins' reference implementations (onnxruntime-extensions PyOps) on a domain-rewritten copy.
Export checks, validation and profiling all open their sessions here."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import onnx

from deploylens.core.model.domains import domain_name
from deploylens.core.plugin_api import ORT_PYOP_DOMAIN, OpPlugin

_REGISTERED: set[str] = set()  # plugins whose reference PyOps this process registered


def _rewrite_domains(model: onnx.ModelProto, rewrite: dict[str, str]) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in copy.graph.node:
        if node.domain in rewrite:
            node.domain = rewrite[node.domain]
            _flatten_int_lists(node)
    kept = [o for o in copy.opset_import if o.domain not in rewrite]
    del copy.opset_import[:]
    copy.opset_import.extend(kept)
    if ORT_PYOP_DOMAIN not in {o.domain for o in kept}:
        copy.opset_import.append(onnx.helper.make_opsetid(ORT_PYOP_DOMAIN, 1))
    return copy


def _flatten_int_lists(node: onnx.NodeProto) -> None:
    """A PyOp reads no list attributes: ``stride=[2, 1]`` also becomes ``stride_0=2,
    stride_1=1`` on the validation copy (TensorRT plugin nodes carry such lists)."""
    for attribute in list(node.attribute):
        if attribute.type == onnx.AttributeProto.INTS:
            for index, value in enumerate(attribute.ints):
                flat = onnx.helper.make_attribute(f"{attribute.name}_{index}", value)
                node.attribute.append(flat)


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


# Domains ONNX Runtime's CPU build has kernels for itself: a model using them needs no plugin.
ORT_NATIVE_DOMAINS = frozenset(
    {"ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc", "com.microsoft.experimental"}
)


def custom_domains(model: onnx.ModelProto) -> set[str]:
    """The domains whose ops ONNX Runtime cannot run by itself: those a node uses (subgraphs and
    local functions included) that are neither ONNX Runtime's own nor defined by the model's
    local functions. An import no node uses (UltraFace's header names one) is not one."""
    from deploylens.core.model.walk import iter_subgraphs

    functions = {(f.domain, f.name) for f in model.functions}
    graphs = [model.graph, *iter_subgraphs(model.graph.node)]
    nodes = [node for graph in graphs for node in graph.node]
    nodes += [node for function in model.functions for node in function.node]
    used = {domain_name(n.domain) for n in nodes if (n.domain, n.op_type) not in functions}
    return used - ORT_NATIVE_DOMAINS


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
        from deploylens.core.errors import ort_error_text

        message = ort_error_text(exc)
        raise UserError(f"ONNX Runtime cannot load {Path(path).name}: {message}") from None
    finally:
        if via:  # the session holds the model in memory; the rewritten copy is not needed
            Path(target).unlink(missing_ok=True)


def run_feeds(
    session: Any,
    feeds: dict[str, Any],
    model: str | Path,
    given: str = "",
    outputs: list[str] | None = None,
) -> list[Any]:
    """``session.run`` on ``feeds``, its failure said as what it is: the model could not take
    these inputs (``given``: the file they came from; "" for inputs DeployLens drew from the
    declared shapes) — a streaming model fed a 1-sample chunk and a wrong sample rate was
    called "malformed". The inputs' shapes and dtypes are named, and how to give others."""
    try:
        return list(session.run(outputs, feeds))
    except Exception as exc:
        if not (type(exc).__module__ or "").startswith("onnxruntime"):
            raise
        from deploylens.core.errors import UserError, ort_error_text

        shapes = "; ".join(
            f"{name} {list(getattr(value, 'shape', []))} {getattr(value, 'dtype', '')}"
            for name, value in feeds.items()
        )
        what = f"the inputs in {given}" if given else "the inputs DeployLens drew for it"
        raise UserError(
            f"ONNX Runtime could not run {Path(model).name} on {what} ({shapes}): "
            f"{ort_error_text(exc)}",
            "The model takes only some inputs (a chunk length, a sample rate, a state it "
            "carries): give them as --inputs FILE.npz, one array per input name."
            if not given
            else "Check the arrays' shapes and values against what the model takes.",
        ) from None
