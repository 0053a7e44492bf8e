"""Layer-wise sessions share one copy of the weights (core/validate/shared_weights.py): each chunk
used to serialize the whole model with its outputs and have ONNX Runtime parse the weights back
(vit_b_16: ~4 s of CPU per session). These check, with real ONNX Runtime sessions on models the
test builds, that the light model carries no weight bytes and that every probed tensor is what
a session over the full model gives — weights of every kind: large float32/float16/int64, a
bfloat16 one (kept inline), a small shape tensor (kept inline: shape inference reads it), one
read from an external data file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.validate.layerwise import compare_layers
from deploylens.core.validate.shared_weights import share_weights
from deploylens.core.validate.tolerances import Tolerances
from tests.helpers.onnx_models import IR, save_with_external_data

WIDTH = 64  # 64 x 64 float32: 16 KB, over the 4 KB a weight keeps inline


def mixed_weights_model() -> onnx.ModelProto:
    """x → MatMul(w32) → Cast fp16 → MatMul(w16) → Cast → Add(bf16 → float) → Reshape(shape)
    → Add(int64 → float): one of each kind of initializer."""
    rng = np.random.default_rng(0)
    w32 = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32)
    w16 = rng.standard_normal((WIDTH, WIDTH)).astype(np.float16)
    bf16 = helper.make_tensor(
        "bias_bf16", TensorProto.BFLOAT16, [WIDTH * WIDTH], np.ones(WIDTH * WIDTH).tolist()
    )
    ints = numpy_helper.from_array(np.arange(WIDTH * WIDTH, dtype=np.int64) % 7, "ints")
    shape = numpy_helper.from_array(np.array([WIDTH * WIDTH], np.int64), "shape")
    nodes = [
        helper.make_node("MatMul", ["x", "w32"], ["a"], name="mm32"),
        helper.make_node("Cast", ["a"], ["a16"], name="to16", to=TensorProto.FLOAT16),
        helper.make_node("MatMul", ["a16", "w16"], ["b16"], name="mm16"),
        helper.make_node("Cast", ["b16"], ["b"], name="to32", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["b", "shape"], ["flat"], name="flatten"),
        helper.make_node("Cast", ["bias_bf16"], ["bias"], name="bias", to=TensorProto.FLOAT),
        helper.make_node("Add", ["flat", "bias"], ["c"], name="add_bias"),
        helper.make_node("Cast", ["ints"], ["intsf"], name="ints", to=TensorProto.FLOAT),
        helper.make_node("Add", ["c", "intsf"], ["y"], name="add_ints"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [WIDTH, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [WIDTH * WIDTH])],
        [
            numpy_helper.from_array(w32, "w32"),
            numpy_helper.from_array(w16, "w16"),
            bf16,
            ints,
            shape,
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)


def full_session_outputs(model: onnx.ModelProto, names: list[str], feeds: dict) -> list:
    """What the old way gave: the whole model, weights and all, with these outputs."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.output[:]
    copy.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    session = ort.InferenceSession(copy.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(names, feeds)


def test_the_light_model_carries_no_weight_bytes_and_every_tensor_matches_the_full_model() -> None:
    model = mixed_weights_model()
    shared = share_weights(model)
    assert sorted(shared.names) == ["ints", "w16", "w32"]  # bf16 and the shape stay inline
    data = shared.model_with_outputs(["a", "b", "y"])
    weights = sum(a.nbytes for a in shared.arrays)
    assert weights >= 3 * WIDTH * WIDTH * 2 and len(data) < 4 * WIDTH * WIDTH  # bf16 (8 KB) only
    assert [o.name for o in shared.light.graph.output] == ["y"]  # restored after the copy
    feeds = {"x": np.random.default_rng(1).standard_normal((WIDTH, WIDTH)).astype(np.float32)}
    names = ["a", "a16", "b", "flat", "c", "y"]
    session = ort.InferenceSession(
        shared.model_with_outputs(names),
        shared.add_to(ort.SessionOptions()),
        providers=["CPUExecutionProvider"],
    )
    got = session.run(names, feeds)
    want = full_session_outputs(model, names, feeds)
    for name, g, w in zip(names, got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, err_msg=name)


def test_layer_wise_on_external_data_compares_every_tensor_against_the_reference(
    tmp_path: Path,
) -> None:
    """The whole layer-wise pass (ONNX-only mode: optimized ORT against unoptimized ORT, both on
    the shared weights) over a model whose weights live in an external data file, chunked small
    so several sessions share them: every tensor agrees and none is missing."""
    path = save_with_external_data(mixed_weights_model(), tmp_path / "m.onnx")
    model = onnx.load(str(path))
    feeds = {"x": np.random.default_rng(2).standard_normal((WIDTH, WIDTH)).astype(np.float32)}
    result = compare_layers(model, feeds, Tolerances(), budget_mb=0.02)
    assert result.chunks > 1
    tensors = {"a", "a16", "b16", "b", "flat", "bias", "c", "intsf", "y"}
    assert {row.tensor for row in result.layers} == tensors
    assert all(row.passed for row in result.layers), [r.tensor for r in result.layers]
