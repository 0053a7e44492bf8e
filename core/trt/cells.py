"""The measured-matrix job (``support.measure``): each probe of ``core/support/probes.py`` asked
of the installed TensorRT-RTX (through the adapter: parse, then an ahead-of-time build) and of
ONNX Runtime's CPU provider (a session, then one run). The caching driver is
``core/support/measure.py``; this module only measures."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from deploylens.core.support.measure import TARGET_CC
from deploylens.core.support.measured_types import CellAnswer, LibraryAnswers, MeasuredMatrix
from deploylens.core.trt.plugin_registry import registered_plugins


def _ort_cell(probe: Any, ort: Any, options: Any) -> CellAnswer:
    try:
        session = ort.InferenceSession(probe.model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return CellAnswer("session-fails", _first_line(exc))
    names = [i.name for i in session.get_inputs()]
    if any(n not in probe.feeds for n in names):
        return CellAnswer("loads", "no numpy array of this type to run it with")
    try:
        run_once(ort, session, {n: probe.feeds[n] for n in names})
    except Exception as exc:
        return CellAnswer("run-fails", _first_line(exc))
    return CellAnswer("runs")


def run_once(ort: Any, session: Any, feeds: dict[str, Any]) -> None:
    """One run whose outputs stay OrtValues (a bfloat16 or float8 result has no numpy type to
    become); strings go through ``run``, the only call that takes them."""
    if any(f.dtype == object for f in feeds.values()):
        session.run(None, feeds)
    else:
        values = {n: ort.OrtValue.ortvalue_from_numpy(f) for n, f in feeds.items()}
        session.run_with_ort_values([o.name for o in session.get_outputs()], values)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]


def measure_job(ctx: Any, params: dict[str, Any]) -> MeasuredMatrix:
    """Measure the cells in ``params["keys"]`` (all, when empty) on both libraries, with the
    parser's importers and the plugin registry it falls back to."""
    import onnx

    from deploylens.core.support.probes import generate
    from deploylens.core.support.request import MeasureRequest

    request = MeasureRequest.from_params(params)
    ctx.progress(0.02, "generating the probes from the ONNX schemas")
    ops = set(request.ops) or None
    probes = generate(ops, set(request.keys) or None)
    trt, ort_said = LibraryAnswers(), LibraryAnswers()
    answer = MeasuredMatrix(
        trt,
        ort_said,
        unprobed=dict(probes.unprobed),
        seeds={p.key: p.seed for p in probes.probes},
        signatures={p.key: p.signature for p in probes.probes},
        variant_seeds={p.key: list(p.seeds) for p in probes.probes if p.variant},
    )
    adapter = None
    try:
        from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter, load_tensorrt

        adapter = TensorRTAdapter(load_tensorrt("tensorrt_rtx"))
        trt.product, trt.version = adapter.product, adapter.version
        trt.plugins = registered_plugins(adapter.trt)
        names = sorted({s.name for s in onnx.defs.get_all_schemas_with_history()})
        trt.importers = adapter.operators(names)
    except Exception as exc:  # the column then says why it is empty
        trt.missing = _first_line(exc)
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 4
        ort_said.version = ort.__version__
    except ImportError as exc:
        ort = None
        ort_said.missing = _first_line(exc)
    total = max(len(probes.probes), 1)
    with quiet_stderr():  # the parser prints each type it cannot hold, thousands of lines
        for index, probe in enumerate(probes.probes):
            if index % 50 == 0:
                ctx.progress(0.05 + 0.9 * index / total, f"probe {index + 1} of {total}")
            key = probe.key  # an attribute variant's answers go beside the cells, by its key
            if adapter is not None:
                said = trt.variants if probe.variant else trt.cells
                said[key] = classify(adapter.try_model(probe.model, [TARGET_CC], probe.feeds))
                if probe.runtime:
                    fed = {**probe.feeds, **_constants(probe.model)}
                    trt.runtime[key] = classify(adapter.try_model(probe.runtime, [TARGET_CC], fed))
            if ort is not None:
                ran = ort_said.variants if probe.variant else ort_said.cells
                ran[key] = _ort_cell(probe, ort, options)
    return answer


def _constants(model: bytes) -> dict[str, Any]:
    """A probe's constant inputs by name: the values its run-time twin is fed."""
    import onnx
    from onnx import numpy_helper

    parsed = onnx.ModelProto()
    parsed.ParseFromString(model)
    return {t.name: numpy_helper.to_array(t) for t in parsed.graph.initializer}


# What the one-node harness cannot answer, said as such instead of as the op's verdict.
HARNESS = (
    ("has datatype", "io-type"),  # the builder's rule for network inputs and outputs
    ("no optimization profile", "needs-profile"),  # a shape input: a profile of its values
    ("cudaError 35", "needs-gpu"),  # the parser's shape analysis wanted a CUDA driver
)


def classify(cell: dict[str, str]) -> CellAnswer:
    """A refusal that comes from the probe's shape, not the op: its own state. ``io-type``:
    TensorRT-RTX takes this type only inside a network, not at an input or output;
    ``needs-profile``: the probe's input is a shape tensor; ``needs-gpu``: the parser asked
    for a CUDA driver. Prediction treats all three as not measured."""
    if cell["state"] in ("build-fails", "parse-fails"):
        # TensorRT-RTX appends a CUDA-driver error to many a parser error on a machine without
        # one: only an error that is nothing but that one is the harness's
        before_cuda = cell["message"].split("[checkMacros")[0]
        for needle, state in HARNESS:
            if needle in cell["message"] and not (
                state == "needs-gpu" and "Error Code" in before_cuda
            ):
                return CellAnswer(state, cell["message"], cell.get("code", ""))
    return CellAnswer(cell["state"], without_driver(cell.get("message", "")), cell.get("code", ""))


def without_driver(message: str) -> str:
    """The op's own error without the CUDA-driver complaint TensorRT-RTX appends on a machine
    with no GPU ("[checkMacros…] … cudaError 35: CUDA driver version is insufficient"): the
    probing machine's state, not the op's support."""
    head, mark, _ = message.partition(" [checkMacros")
    return head.strip() if mark and "cudaError" in message and head.strip() else message


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """fd 2 to /dev/null for the probe loop (C++ prints bypass Python's sys.stderr)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
