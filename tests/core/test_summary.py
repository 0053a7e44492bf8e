"""Model summaries: the bundled samples, subgraphs, functions, symbolic shapes, external data."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import onnx
import pytest

from deploylens.core.model.summary import ModelSummary, inspect_model
from deploylens.core.model.summary_text import summary_text
from tests.helpers.onnx_models import (
    chain_model,
    function_model,
    if_model,
    save_with_external_data,
    weighty_model,
)


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def test_every_bundled_sample_matches_its_manifest(samples: Path) -> None:
    manifest = json.loads((samples / "manifest.json").read_text())
    files = 0
    for entry in manifest["samples"].values():
        for export in entry["exports"].values():
            if "file" not in export:
                continue
            files += 1
            summary = inspect_model(samples / export["file"])
            assert [v.name for v in summary.inputs] == [i["name"] for i in entry["inputs"]]
            assert summary.inputs[0].shape == entry["inputs"][0]["shape"]
            assert summary.opset_imports == export["opset"]
            assert summary.node_count == export["nodes"]
            assert not summary.problems
    batched = manifest["batched"]  # the dynamic-batch sample for sweeps and calibration
    summary = inspect_model(samples / batched["file"])
    assert [v.name for v in summary.inputs] == [i["name"] for i in batched["inputs"]]
    assert summary.inputs[0].shape == batched["inputs"][0]["shape"]
    assert summary.node_count == batched["nodes"] and not summary.problems
    assert files + 1 == len(list(samples.glob("*.onnx")))


def test_custom_domain_sample_lists_its_domain(samples: Path) -> None:
    summary = inspect_model(samples / "custom_fn_symbolic.torchscript.onnx")
    assert summary.opset_imports["custom_domain"] == 1
    assert ("custom_domain", "customOp2") in {(o.domain, o.op_type) for o in summary.op_counts}


def test_symbolic_dims_and_counts(tmp_path: Path) -> None:
    summary = inspect_model(_save(chain_model(10, dims=("batch", 8)), tmp_path / "c.onnx"))
    assert summary.inputs[0].shape == ["batch", 8]
    assert summary.inputs[0].dtype == "float32"
    assert {(o.op_type, o.count) for o in summary.op_counts} == {("Relu", 5), ("Add", 5)}
    assert summary.initializer_count == 1 and summary.initializer_bytes == 32
    assert summary.warnings == []


def test_subgraphs_are_counted_recursively(tmp_path: Path) -> None:
    summary = inspect_model(_save(if_model(), tmp_path / "if.onnx"))
    # then (1 Constant), else (1 If) whose branches are two more subgraphs (1 Constant each)
    assert summary.node_count == 1
    assert summary.subgraph_count == 4
    assert summary.subgraph_node_count == 4
    assert {(o.op_type, o.count) for o in summary.op_counts} == {("If", 2), ("Constant", 3)}


def test_local_functions(tmp_path: Path) -> None:
    summary = inspect_model(_save(function_model(), tmp_path / "f.onnx"))
    assert [(f.domain, f.name, f.nodes) for f in summary.functions] == [("custom", "DoubleRelu", 2)]
    assert "custom::DoubleRelu (2 nodes)" in summary_text(summary)


def test_external_data_is_listed_and_never_read(tmp_path: Path) -> None:
    path = save_with_external_data(weighty_model(8, 250_000), tmp_path / "big.onnx")
    tracemalloc.start()
    summary = inspect_model(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    (external,) = summary.external_data
    assert (external.location, external.tensors, external.present) == ("weights.bin", 8, True)
    assert external.bytes_referenced == summary.initializer_bytes == 8 * 250_000 * 4
    assert external.size_on_disk == 8_000_000
    assert peak < 1_000_000  # 8 MB of weights on disk, well under 1 MB traced while inspecting


def test_summary_roundtrips_through_json(samples: Path) -> None:
    summary = inspect_model(samples / "small_cnn.torchscript.onnx")
    again = ModelSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again == summary


def test_checker_findings_are_warnings_not_failures(artifacts: Path) -> None:
    bad = artifacts / "nvidia-tensorrt-onnx-test-models/tools/Polygraphy/tests/models"
    summary = inspect_model(bad / "bad_graph_with_no_import_domains.onnx")
    assert any("opset" in w for w in summary.warnings)


@pytest.mark.parametrize("name", ["logreg_iris.onnx", "sigmoid.onnx", "mul_1.onnx"])
def test_onnxruntime_dataset_models(artifacts: Path, name: str) -> None:
    summary = inspect_model(artifacts / "onnxruntime-pip-1.31.1-datasets" / name)
    assert summary.inputs and summary.outputs


def test_every_node_inference_rejects_is_listed_not_just_the_first(tmp_path: Path) -> None:
    """The checker stops at its first error; strict shape inference names every bad node."""
    import onnx
    from onnx import TensorProto, helper

    from deploylens.core.model.summary import inspect_model

    f = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("a", f, [2, 3]),
        helper.make_tensor_value_info("b", f, [4, 5]),
    ]
    nodes = [helper.make_node("MatMul", ["a", "b"], [f"m{i}"], f"bad_matmul_{i}") for i in range(3)]
    nodes.append(helper.make_node("Add", ["m0", "m1"], ["y"], "add"))
    graph = helper.make_graph(nodes, "bad", inputs, [helper.make_tensor_value_info("y", f, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(tmp_path / "bad.onnx"))
    warnings = inspect_model(tmp_path / "bad.onnx").warnings
    for index in range(3):
        assert any(f"bad_matmul_{index}" in w for w in warnings), warnings


def _weighty_with_errors() -> onnx.ModelProto:
    """Large weights (MatMul 256x256, kept as raw bytes), a Reshape whose shape only the
    initializer's values give, a wrongly shaped MatMul and an output of the wrong rank."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    weights = [
        numpy_helper.from_array(np.ones((256, 256), np.float32), "w"),
        numpy_helper.from_array(np.ones((3, 5), np.float32), "bad_w"),
        numpy_helper.from_array(np.array([4, -1], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], "matmul"),
        helper.make_node("Reshape", ["h", "shape"], ["r"], "reshape"),
        helper.make_node("MatMul", ["r", "bad_w"], ["y"], "bad_matmul"),
    ]
    graph = helper.make_graph(
        nodes,
        "weighty",
        [helper.make_tensor_value_info("x", f, [4, 256])],
        [helper.make_tensor_value_info("y", f, [4, 5, 7])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "in-process"])
def test_checks_without_weight_bytes_find_what_the_full_model_gives(
    monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    """The checker and strict inference run on the model with its large weights' bytes
    replaced by references (3x polygraphy's CPU was spent copying them): the findings equal
    those on the full model — the Reshape's shape still comes from its small initializer — and
    the caller's model keeps every byte, in the forked child and in-process alike."""
    import os

    from deploylens.core.model.summary import checker_findings
    from deploylens.core.model.weightless import without_weight_data

    model = _weighty_with_errors()
    before = model.SerializeToString()
    expected: list[str] = []
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:
        expected = [line.strip() for line in str(exc).splitlines() if line.strip()]
    assert any("bad_matmul" in line for line in expected)  # inference reached it: knew r's shape
    if not forked:
        monkeypatch.delattr(os, "fork")
    found = checker_findings(model)
    assert len(found) == len(expected) and [w for w in found if "bad_matmul" in w]
    assert expected[-1].removeprefix("[ShapeInferenceError] Inference error(s): ") in found[-1]
    assert model.SerializeToString() == before  # nothing of the caller's model changed
    light = without_weight_data(model)
    stripped = {
        t.name for t in light.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL
    }
    assert stripped == {"w"} and light.ByteSize() < model.ByteSize() - 250_000


def test_the_deferred_check_finds_what_an_unchecked_summary_left_out(tmp_path: Path) -> None:
    """The GUI opens a model unchecked and asks the graph's shapes job (a real worker) for
    the checker's findings after the paint: they are exactly the warnings ``inspect`` adds
    with the check, and the shapes still come; a model with external data is not checked,
    as ``inspect`` does not check it."""
    from deploylens.core.graph.request import ShapesRequest
    from deploylens.core.model.summary import describe_type

    path = _save(_weighty_with_errors(), tmp_path / "bad.onnx")
    checked = inspect_model(path).warnings
    unchecked = inspect_model(path, check=False).warnings
    assert any("bad_matmul" in w for w in checked) and len(checked) > len(unchecked)
    found = ShapesRequest(str(path), check=True).run(timeout=120)
    assert found.findings is not None and unchecked + found.findings == checked
    assert found.shapes()["h"] == ("float32", [4, 256])  # inference still typed what it could
    inferred = onnx.shape_inference.infer_shapes(onnx.load(path)).graph
    assert found.shapes() == {  # each tensor's own pair, though they are sent shared
        v.name: (describe_type(v.type)[1] or "?", describe_type(v.type)[2])
        for v in (*inferred.value_info, *inferred.input, *inferred.output)
    }
    assert len(found.types) < len(found.type_of)
    assert ShapesRequest(str(path)).run(timeout=120).findings is None  # not asked
    (tmp_path / "ext").mkdir()
    external = save_with_external_data(weighty_model(2, 1000), tmp_path / "ext" / "m.onnx")
    assert inspect_model(external).warnings == inspect_model(external, check=False).warnings
    assert ShapesRequest(str(external), check=True).run(timeout=120).findings == []


def test_a_model_strict_inference_types_is_not_inferred_a_second_time(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where strict inference (the check, in its forked child) goes through, the shapes job
    answers with its shapes: the same types and shapes a loose inference gives, and no second
    inference in the worker."""
    import deploylens.core.graph.jobs as jobs
    from deploylens.core.model.summary import describe_type

    path = samples / "small_cnn.dynamo.onnx"
    loose = onnx.shape_inference.infer_shapes(onnx.load(path)).graph
    expected = {
        v.name: (describe_type(v.type)[1] or "?", describe_type(v.type)[2])
        for v in (*loose.value_info, *loose.input, *loose.output)
    }
    infer = onnx.shape_inference.infer_shapes

    def strict_only(model: onnx.ModelProto, *args: object, **kwargs: object) -> object:
        assert kwargs.get("strict_mode"), "the shapes job inferred a second time"
        return infer(model, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", strict_only)

    class Ctx:
        def progress(self, fraction: float | None, text: str, data: object = None) -> None:
            pass

    found = jobs.shapes_job(Ctx(), {"path": str(path), "check": True})
    assert found.findings == [] and found.error == ""
    assert found.shapes() == expected and len(expected) > 10


def test_a_checker_that_crashes_its_process_leaves_the_shapes_job_standing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model on which onnx's checker aborts its (forked) process: shape inference would
    abort the worker the same way, so the job answers the crash as its finding and error
    without inferring in-process."""
    import os

    import deploylens.core.graph.jobs as jobs
    from deploylens.core.model import summary

    def aborts(model: onnx.ModelProto, *asked: object) -> list[str]:
        os.abort()

    monkeypatch.setattr(summary, "_checker_findings", aborts)
    monkeypatch.setattr(
        onnx.shape_inference, "infer_shapes", lambda *a, **k: pytest.fail("inferred")
    )

    class Ctx:
        def progress(self, fraction: float | None, text: str, data: object = None) -> None:
            pass

    path = Path(__file__).resolve().parents[2] / "resources/samples/small_cnn.dynamo.onnx"
    found = jobs.shapes_job(Ctx(), {"path": str(path), "check": True})
    assert found.findings is not None and len(found.findings) == 1
    assert "SIGABRT" in found.findings[0] and found.error == found.findings[0]
    assert found.shapes() == {}


def test_a_shapes_answer_whose_type_index_points_past_its_types_is_refused() -> None:
    from deploylens.core.errors import UserError
    from deploylens.core.graph.result import ShapesResult
    from deploylens.core.results import typed_result

    sent = {"types": [["float32", [1, 3]]], "type_of": {"x": 0, "y": 1}}
    with pytest.raises(UserError, match=r"does not match.*type index is outside"):
        typed_result("graph.shapes", sent)
    sent["type_of"] = {"x": 0, "y": 0}
    assert typed_result("graph.shapes", sent).shapes() == {
        "x": ("float32", [1, 3]),
        "y": ("float32", [1, 3]),
    }
    assert ShapesResult.from_dict(ShapesResult.from_dict(sent).to_dict()).type_of == sent["type_of"]


def test_a_shapes_result_lists_each_distinct_type_once_whatever_the_pairs_identity() -> None:
    """``ShapesResult.of`` tells ``declared_types``' shared pairs apart by identity; equal pairs
    that are separate objects (another caller's) still share one entry, and every tensor keeps
    its own type."""
    from onnx import TensorProto, helper

    from deploylens.core.graph.ir import declared_types
    from deploylens.core.graph.result import Shape, ShapesResult

    values = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3]),
        helper.make_tensor_value_info("c", TensorProto.INT64, ["n"]),
        helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 3]),
    ]
    found = declared_types(values)
    result = ShapesResult.of(found, ["a finding"])
    assert result.shapes() == found and result.findings == ["a finding"]
    assert len(result.types) == 2 and result.type_of["a"] == result.type_of["d"]
    separate: dict[str, tuple[str, Shape | None]] = {
        "x": ("float32", [1, 3]),
        "y": ("float32", [1, 3]),
        "z": ("int64", None),
    }
    again = ShapesResult.of(separate)
    assert again.types == [("float32", [1, 3]), ("int64", None)]
    assert again.type_of == {"x": 0, "y": 0, "z": 1}
