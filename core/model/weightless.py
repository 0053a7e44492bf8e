"""A model as onnx's checker and shape inference need it: every large weight's bytes replaced
by a reference to nowhere (``#``-prefixed external data, which the checker accepts without a
file), so neither serializes, copies and re-parses hundreds of megabytes it never looks at.
Small tensors keep their values: shape inference reads Reshape shapes, Slice starts and the
like from them (all int64 vectors far under the threshold)."""

from __future__ import annotations

import onnx

from deploylens.core.model.isolated import in_isolated_child
from deploylens.core.model.walk import iter_subgraphs

KEEP_BYTES = 4096  # a tensor this small keeps its bytes (shape-like values always do)
NOWHERE = "#deploylens-weight-not-loaded"  # '#': onnx's checker looks for no file


def without_weight_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its large raw-data initializers turned into external references; only a
    tensor stored solely as ``raw_data`` is touched, so every finding of the checker about how
    a tensor is stored stays. In an isolated (forked) child the model is changed in place (the
    child's copy, about to exit); elsewhere a copy is changed."""
    if not in_isolated_child():
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        model = copy
    for graph in (model.graph, *iter_subgraphs(model.graph.node)):
        for tensor in graph.initializer:
            if only_raw_data(tensor) and len(tensor.raw_data) > KEEP_BYTES:
                length = len(tensor.raw_data)
                tensor.ClearField("raw_data")
                refer_nowhere(tensor, length)
    return model


def refer_nowhere(tensor: onnx.TensorProto, length: int) -> None:
    """Mark ``tensor`` (its bytes already gone) as ``length`` bytes of external data at NOWHERE:
    what onnx's checker accepts without a file, and what ONNX Runtime replaces with the arrays
    handed to ``add_external_initializers`` (core/validate/shared_weights.py)."""
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", NOWHERE), ("offset", "0"), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def only_raw_data(tensor: onnx.TensorProto) -> bool:
    if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.external_data:
        return False
    typed = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
    return not any(len(getattr(tensor, name)) for name in typed)
