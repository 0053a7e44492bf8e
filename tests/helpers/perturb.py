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


def perturb_first_weight(
    model_path: Path, out: Path, feeds: dict[str, np.ndarray] | None = None, scale: float = 1.0,
    seed: int = 0, least: float = 0.03,
) -> str:  # fmt: skip
    """A copy with noise (``scale`` × its own spread) added to one float weight (≥ 64 elements)
    that a Conv, Gemm or MatMul reads, any exporter's layout: the first in graph order whose
    noise moves the outputs (ONNX Runtime on ``feeds``) by a relative L2 of at least ``least``
    — a random-init ConvNeXt's late blocks are scaled by 1e-6 and a BERT's query weights barely
    move its near-uniform attention, so such a perturbation is no broken model at all. Returns
    the node that reads it."""
    import onnxruntime as ort

    model = onnx.load(str(model_path))
    weights = {t.name: t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    readers = [
        (name, node.name or node.op_type)
        for node in model.graph.node
        if node.op_type in ("Conv", "Gemm", "MatMul", "ConvTranspose")
        for name in node.input
        if name in weights and np.prod(weights[name].dims) >= 64
    ]
    base = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    feeds = feeds or {
        i.name: np.random.default_rng(1).uniform(-1, 1, [d if isinstance(d, int) else 1
                                                         for d in i.shape]).astype(np.float32)
        for i in base.get_inputs()
    }  # fmt: skip
    want = base.run(None, feeds)
    for factor in (scale, 4 * scale):  # a weight that matters, moved enough to matter
        for name, node in dict.fromkeys(readers):
            tensor = weights[name]
            array = numpy_helper.to_array(tensor)
            spread = float(array.std()) or 1e-2
            noise = np.random.default_rng(seed).normal(0, factor * spread, array.shape)
            original = onnx.TensorProto()
            original.CopyFrom(tensor)
            moved_array = (array + noise).astype(array.dtype)
            tensor.CopyFrom(numpy_helper.from_array(moved_array, tensor.name))
            changed = model.SerializeToString()
            session = ort.InferenceSession(changed, providers=["CPUExecutionProvider"])
            got = session.run(None, feeds)
            moved = max(_rel_l2(g, w) for g, w in zip(got, want, strict=True) if np.size(w))
            if moved >= least:
                onnx.save(model, str(out))
                return node
            tensor.CopyFrom(original)
    raise ValueError(f"no single weight of {model_path.name} moves its outputs by {least}")


def _rel_l2(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    norm = float(np.linalg.norm(want))
    return float(np.linalg.norm(got - want)) / norm if norm else float(np.linalg.norm(got))
