"""Test helper: a copy of an ONNX model with one initializer perturbed (a 'broken conversion')."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def perturb_first(
    model_path: Path, out: Path, op_type: str = "Conv", scale: float = 0.05, seed: int = 0
) -> str:
    """Add noise to the weight of the first ``op_type`` node; returns that node's name."""
    model = onnx.load(str(model_path))
    node = next(n for n in model.graph.node if n.op_type == op_type)
    weights = {t.name: t for t in model.graph.initializer}
    tensor = weights[node.input[1]]
    array = numpy_helper.to_array(tensor)
    noise = np.random.default_rng(seed).normal(0, scale, array.shape).astype(array.dtype)
    tensor.CopyFrom(numpy_helper.from_array(array + noise, tensor.name))
    onnx.save(model, str(out))
    return node.name
