"""TensorRT parser verdicts that were wrong, each on a model built here: INT64 index/shape inputs
blocked Reshape/Gather/Slice on 8.6 (its table says INT64 is cast down to INT32),
ConstantOfShape was blocked everywhere (its INT64 shape input was checked against the output
types, and 10.1's table says "INF64"), RoiAlign on 10.1 was blocked for its INT64
batch_indices; the fix ladder offered IPluginV3 for 8.6 and "change the opset" where the
model's opset already works; the asinh composition was −inf at x = −1e4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.jobs import run_job
from deploylens.core.support.analysis import analyze, parse_target
from deploylens.core.support.compositions import COMPOSITIONS, composition_model
from deploylens.core.support.fixes import ladder
from deploylens.core.support.matrix import SupportMatrix


@pytest.fixture(scope="module")
def matrix() -> SupportMatrix:
    return SupportMatrix.load(run_job("support.collect").path)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _blocked(matrix: SupportMatrix, model: onnx.ModelProto, target: str) -> dict[str, str]:
    (report,) = analyze(model, matrix, [parse_target(target)])
    return {b.op: b.reason for b in report.blockers}


def index_ops_model() -> onnx.ModelProto:
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    x = helper.make_tensor_value_info("x", f, [2, 6])
    y = helper.make_tensor_value_info("y", f, None)
    inits = [
        numpy_helper.from_array(np.array([3, 4], np.int64), "shape"),
        numpy_helper.from_array(np.array([0, 2], np.int64), "idx"),
        numpy_helper.from_array(np.array([0], np.int64), "starts"),
        numpy_helper.from_array(np.array([2], np.int64), "ends"),
        numpy_helper.from_array(np.array([0], np.int64), "axes"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"], "reshape"),
        helper.make_node("Gather", ["r", "idx"], ["g"], "gather"),
        helper.make_node("Slice", ["g", "starts", "ends", "axes"], ["s"], "slice"),
        helper.make_node(
            "Constant",
            [],
            ["c"],
            "const",
            value=numpy_helper.from_array(np.array([2, 4], np.int64)),
        ),
        helper.make_node("ConstantOfShape", ["c"], ["zeros"], "zeros"),
        helper.make_node("Add", ["s", "zeros"], ["y"], "add"),
    ]
    model = _model(nodes, [x], [y], inits)
    model.graph.output[0].type.tensor_type.elem_type = f
    del i64
    return model


@pytest.mark.parametrize("target", ["trt-8.6", "trt-10.0", "trt-10.1"])
def test_int64_index_and_shape_inputs_do_not_block(matrix: SupportMatrix, target: str) -> None:
    assert _blocked(matrix, index_ops_model(), target) == {}


def test_int64_data_is_cast_down_on_8_6_and_said(matrix: SupportMatrix) -> None:
    """A Constant holding INT64 values: 8.6 casts it to INT32 (clamping) — a note, not a block."""
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2])
    node = helper.make_node(
        "Constant", [], ["y"], "c", value=numpy_helper.from_array(np.array([1, 2], np.int64))
    )
    model = _model([node], [], [y])
    verdict = matrix.trt_verdict("", "Constant", 17, "8.6", ["int64"])
    assert verdict.ok and "INT64 is cast down to INT32" in verdict.reason
    assert _blocked(matrix, model, "trt-8.6") == {}


def test_constant_of_shape_int64_output_reads_the_table_typo(matrix: SupportMatrix) -> None:
    assert matrix.trt_verdict("", "ConstantOfShape", 17, "10.1", ["int64"]).ok  # "INF64"


def test_roialign_on_10_1_is_not_blocked_by_its_batch_indices(matrix: SupportMatrix) -> None:
    f = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("x", f, [1, 3, 8, 8]),
        helper.make_tensor_value_info("rois", f, [2, 4]),
        helper.make_tensor_value_info("batch", TensorProto.INT64, [2]),
    ]
    y = helper.make_tensor_value_info("y", f, [2, 3, 2, 2])
    node = helper.make_node(
        "RoiAlign", ["x", "rois", "batch"], ["y"], "roi", output_height=2, output_width=2
    )
    assert _blocked(matrix, _model([node], inputs, [y]), "trt-10.1") == {}


def test_a_type_block_offers_no_opset_change_and_the_right_plugin_api(
    matrix: SupportMatrix,
) -> None:
    """Abs on INT8 is blocked for its type on TensorRT; changing the opset cannot help."""
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [4])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [4])
    model = _model([helper.make_node("Abs", ["x"], ["y"], "abs")], [x], [y])
    for target, interface in (("trt-8.6", "IPluginV2DynamicExt"), ("trt-10.1", "IPluginV3")):
        (report,) = analyze(model, matrix, [parse_target(target)])
        (blocker,) = report.blockers
        assert "INT8" in blocker.reason
        kinds = [s.kind for s in blocker.fixes]
        assert "opset" not in kinds, blocker.fixes
        plugin = blocker.fixes[-1].title
        assert interface in plugin
        if target == "trt-8.6":
            assert "IPluginV3 needs TensorRT 10" in plugin


def test_the_opset_rung_is_offered_only_when_another_opset_works() -> None:
    assert ladder("Asinh", "trt-10.1", [9, 10, 11], None, "trt", 7, "10.1")[0].kind == "opset"
    assert all(
        s.kind != "opset" for s in ladder("Asinh", "trt-10.1", [9, 10, 11], None, "trt", 10, "10.1")
    )


def _grid() -> np.ndarray:
    magnitudes = np.concatenate([[0.0], np.logspace(-30, 30, 2001)]).astype(np.float32)
    return np.concatenate([-magnitudes[::-1], magnitudes]).astype(np.float32)


def _close(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) <= np.maximum(2e-7, 2e-6 * np.abs(want))


@pytest.mark.parametrize("op", ["Asinh", "Acosh", "Sinh", "Cosh"])
def test_compositions_match_torch_over_the_float32_range(op: str) -> None:
    """Run the ONNX composition in ONNX Runtime and the torch composition the export fix pastes,
    against torch's own op, on ±1e30 (the textbook asinh gave −inf at −1e4)."""
    import onnxruntime as ort
    import torch

    x = _grid()
    reference = getattr(torch, op.lower())(torch.from_numpy(x)).numpy()
    if op in ("Sinh", "Cosh"):
        x = x[np.abs(x) <= 89.0]  # beyond, float32 sinh/cosh are inf themselves
        reference = getattr(torch, op.lower())(torch.from_numpy(x)).numpy()
    session = ort.InferenceSession(
        composition_model(op).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (onnx_out,) = session.run(None, {"x": x})
    namespace = {"torch": torch, "x": torch.from_numpy(x)}
    *lines, last = COMPOSITIONS[op].torch.splitlines()
    for line in lines:
        exec(line, namespace)
    torch_out = eval(last, namespace).numpy()
    for name, got in (("onnx", onnx_out), ("torch", torch_out)):
        valid = ~np.isnan(reference)
        assert np.array_equal(np.isnan(got), np.isnan(reference)), name
        bad = ~_close(got[valid], reference[valid])
        assert not bad.any(), (name, x[valid][bad][:5], got[valid][bad][:5])
    if op == "Asinh":
        assert np.isfinite(onnx_out).all()
        minus = np.float32(-1e4)
        with np.errstate(divide="ignore"):
            textbook = np.log(minus + np.sqrt(minus * minus + np.float32(1)))
        assert textbook == -np.inf  # the bug it replaces


def comparison_model() -> onnx.ModelProto:
    """Greater and IsNaN on float inputs: their results are BOOL, which onnx-tensorrt's type
    column (the types an op takes) does not list."""
    f = TensorProto.FLOAT
    a, b = (helper.make_tensor_value_info(n, f, [4]) for n in ("a", "b"))
    outputs = [helper.make_tensor_value_info(n, TensorProto.BOOL, [4]) for n in ("gt", "nan")]
    nodes = [
        helper.make_node("Greater", ["a", "b"], ["gt"], "greater"),
        helper.make_node("IsNaN", ["a"], ["nan"], "isnan"),
    ]
    return _model(nodes, [a, b], outputs)


def test_a_bool_result_does_not_block_comparison_ops(matrix: SupportMatrix, request) -> None:
    """Outputs were checked against the type column: every comparison op was "BLOCKED … not
    BOOL" on 10.1 (46 of the onnx backend node tests); the live parser accepts them."""
    assert _blocked(matrix, comparison_model(), "trt-10.1") == {}
    rtx = request.getfixturevalue("rtx")
    import tempfile
    from pathlib import Path

    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cmp.onnx"
        onnx.save(comparison_model(), path)
        assert TensorRTAdapter(rtx).probe(str(path))["supported"] is True


# -- the verdicts real models got wrong (the verdicts issue), each rebuilt here ------------------
def _io(rank: int = 2) -> tuple[onnx.ValueInfoProto, onnx.ValueInfoProto]:
    dims = [1, 4, 8, 8][-rank:] if rank <= 4 else [1] * rank
    return (helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None))  # fmt: skip


def test_surgerys_own_trt_plugins_nodes_are_native_layers_on_10_1(matrix: SupportMatrix) -> None:
    """LayerNormalization and Gelu that surgery writes in ``trt.plugins`` (below the opsets that
    define them): TensorRT 10.1's parser imports both natively; it said 'needs plugin
    ModulatedDeformConv2d' and advised undoing the surgery."""
    x, y = _io(3)
    inits = [numpy_helper.from_array(np.ones(8, np.float32), "g"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b")]  # fmt: skip
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], "ln", domain="trt.plugins",
                         axis=-1),
        helper.make_node("Gelu", ["n"], ["y"], "gelu", domain="trt.plugins"),
    ]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("trt.plugins", 1)],
                              ir_version=8)  # fmt: skip
    assert _blocked(matrix, model, "trt-10.1") == {}


def test_an_old_opset_is_read_with_a_warning_not_blocked(matrix: SupportMatrix) -> None:
    """An opset-8 MNIST-like chain: 10.1's table documents opsets 9-20, but the parser reads
    older opsets with a warning — it was BLOCKED."""
    x, y = _io(4)
    w = numpy_helper.from_array(np.ones((2, 4, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], "conv"),
             helper.make_node("Relu", ["c"], ["y"], "relu")]  # fmt: skip
    model = _model(nodes, [x], [y], [w], opset=8)
    (report,) = analyze(model, matrix, [parse_target("trt-10.1")])
    assert report.ok, report.blockers
    verdict = matrix.trt_verdict("", "Conv", 8, "10.1", ["float32"])
    assert verdict.ok and "with a warning" in verdict.reason


@pytest.mark.parametrize("domain", ["", "trt.plugins"])
def test_nms_plugins_that_ship_with_tensorrt_are_not_write_your_own(
    matrix: SupportMatrix, domain: str
) -> None:
    """EfficientNMS_TRT and BatchedNMS_TRT are in TensorRT's plugin library: the verdict says
    so (it said 'write your own plugin'); a plugin nobody ships still needs one."""
    x, y = _io(2)
    nodes = [
        helper.make_node("EfficientNMS_TRT", ["x"], ["e"], "nms1", domain=domain),
        helper.make_node("BatchedNMS_TRT", ["e"], ["y"], "nms2", domain=domain),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt.plugins", 1)],
        ir_version=8,
    )
    assert _blocked(matrix, model, "trt-10.1") == {}
    verdict = matrix.trt_verdict(domain, "EfficientNMS_TRT", 17, "10.1")
    assert verdict.ok and "plugin library ships" in verdict.reason
    unknown = matrix.trt_verdict(domain, "MyVeryOwnNMS", 17, "10.1")
    assert not unknown.ok and "needs a plugin" in unknown.reason


@pytest.mark.parametrize(
    ("attributes", "said"),
    [({"antialias": 1}, "antialiasing is not supported"),
     ({"keep_aspect_ratio_policy": "not_larger"}, "not 'not_larger'")],
)  # fmt: skip
def test_resize_attributes_are_checked_against_the_documented_restrictions(
    matrix: SupportMatrix, attributes: dict, said: str
) -> None:
    """The super-resolution model's Resize nodes were judged by op type alone; 10.1 documents
    which modes, policies and antialiasing it imports."""
    x, y = _io(4)
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    resize = helper.make_node("Resize", ["x", "", "scales"], ["y"], "up", **attributes)
    model = _model([resize], [x], [y], [scales], opset=19)
    blocked = _blocked(matrix, model, "trt-10.1")
    assert "Resize" in blocked and said in blocked["Resize"], blocked
    plain = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], "up")], [x], [y],
                   [scales], opset=19)  # fmt: skip
    assert _blocked(matrix, plain, "trt-10.1") == {}


def test_a_cubic_resize_is_imported_since_8_5_whatever_the_table_text(
    matrix: SupportMatrix, rtx: Any, tmp_path: Path
) -> None:
    """Issue 43: every table up to 10.1 lists Resize modes "nearest, linear", but onnx-tensorrt
    imports cubic since 8.5 and TensorRT-RTX's live parser builds it; blocking it on 10.1 was a
    regression of the Resize rules."""
    x, y = _io(4)
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    cubic = helper.make_node("Resize", ["x", "", "scales"], ["y"], "up", mode="cubic")
    model = _model([cubic], [x], [y], [scales], opset=19)
    assert _blocked(matrix, model, "trt-10.1") == {}
    at_13 = _model([cubic], [x], [y], [scales], opset=13)
    assert _blocked(matrix, at_13, "trt-8.6") == {}
    assert "not 'cubic'" in _blocked(matrix, at_13, "trt-8.4")["Resize"]
    path = tmp_path / "cubic.onnx"
    onnx.save(model, path)
    network = rtx.Builder(rtx.Logger()).create_network(0)
    assert rtx.OnnxParser(network, rtx.Logger()).parse_from_file(str(path))


def test_a_qdq_model_is_judged_by_its_data_types_not_its_zero_points(matrix: SupportMatrix) -> None:
    """A standard QDQ model (FP32 → QuantizeLinear → DequantizeLinear → Conv) was BLOCKED on the
    8.6/10.1 tables: the INT8 zero point was checked against QuantizeLinear's FP32 column."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "dq"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "z"], ["w"], "wdq"),
             helper.make_node("Conv", ["xd", "w"], ["y"], "conv")]  # fmt: skip
    weights = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
               numpy_helper.from_array(np.array(0, np.int8), "z"),
               numpy_helper.from_array(np.ones((4, 3, 3, 3), np.int8), "wq"),
               numpy_helper.from_array(np.array(0.01, np.float32), "ws")]  # fmt: skip
    model = _model(nodes, [x], [y], weights, opset=13)
    for target in ("trt-8.6", "trt-10.1", "trt-10.16"):
        assert _blocked(matrix, model, target) == {}, target


def test_the_opset_span_never_contradicts_the_verdict() -> None:
    """The Op-support panel said "OK — no opset works as is" for a model that runs at its own
    opset when no single range covered every operator: CLI and panel now share one sentence."""
    from deploylens.core.support.analysis import Blocker, TargetReport
    from deploylens.core.support.queries import span_text

    runs = TargetReport("ONNX Runtime (CPU)", True, [], None, 17)
    assert span_text(runs).startswith("works at the model's opset 17")
    blocked = TargetReport("TensorRT 10.16", False, [Blocker("Roll", 1, ["r"], "no")], None, 17)
    assert span_text(blocked) == "no opset works as is"
    ranged = TargetReport("ONNX Runtime (CPU)", True, [], (13, 21), 17)
    assert span_text(ranged) == "works at opsets 13–21"
