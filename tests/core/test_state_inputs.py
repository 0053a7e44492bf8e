"""A streaming model that takes only some inputs (a chunk length its Reshape needs, a sample
rate its If picks a branch by, a state it carries): inputs drawn from the declared shapes (a
1-sample chunk) are said as inputs the model cannot take, with how to give others — never "the
model is malformed" — and ``validate`` and ``surgery`` take the user's ``--inputs``
(issue 63). The model is built here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from deploylens.core.cli import main


def _branch(name: str, width: int) -> object:
    return helper.make_graph(
        [
            helper.make_node("Reshape", ["x", f"{name}_shape"], [f"{name}_r"]),
            helper.make_node("ReduceSum", [f"{name}_r", f"{name}_axes"], [f"{name}_y"],
                             keepdims=0),
        ],
        name,
        [],
        [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, ["chunks"])],
        [helper.make_tensor(f"{name}_shape", TensorProto.INT64, [2], [-1, width]),
         helper.make_tensor(f"{name}_axes", TensorProto.INT64, [1], [1])],
    )  # fmt: skip


def streaming_model(path: Path) -> Path:
    """x [1, n] (n a multiple of 64 at 16 kHz, of 32 otherwise), a state, a sample rate."""
    graph = helper.make_graph(
        [
            helper.make_node("Equal", ["sr", "sixteen_k"], ["is16k"]),
            helper.make_node("If", ["is16k"], ["y"], then_branch=_branch("then", 64),
                             else_branch=_branch("else", 32)),
            helper.make_node("Mul", ["state", "half"], ["state_out"]),
        ],
        "streaming",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, 4]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["chunks"]),
            helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [2, 1, 4]),
        ],
        [helper.make_tensor("sixteen_k", TensorProto.INT64, [], [16000]),
         helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path.write_bytes(model.SerializeToString())
    return path


def _inputs(path: Path) -> Path:
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.uniform(-1, 1, (1, 512)).astype(np.float32),
             state=rng.uniform(-1, 1, (2, 1, 4)).astype(np.float32),
             sr=np.array(16000, np.int64))  # fmt: skip
    return path


def test_validate_says_the_model_cannot_take_drawn_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = streaming_model(tmp_path / "vad.onnx")
    assert main(["validate", str(model)]) == 1
    said = capsys.readouterr().err
    assert "could not run vad.onnx on the inputs DeployLens drew for it" in said
    assert "x [1, 1] float32" in said and "--inputs FILE.npz" in said
    assert "malformed" not in said and "Traceback" not in said
    assert main(["validate", str(model), "--inputs", str(_inputs(tmp_path / "in.npz")),
                 "--layerwise", "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["word"] == "PASS" and report["verdict"]["evidence"]["count"] == 2


def test_surgery_compares_on_the_inputs_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = streaming_model(tmp_path / "vad.onnx")
    out = tmp_path / "vad.edited.onnx"
    code = main(["surgery", str(model), "--fold", "--out", str(out), "--no-tensorrt", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3, report  # the comparison could not run on drawn inputs: inconclusive
    assert "could not run vad.onnx on the inputs DeployLens drew" in report["compare"]["reason"]
    assert "malformed" not in report["compare"]["reason"]
    code = main(["surgery", str(model), "--fold", "--out", str(out), "--no-tensorrt",
                 "--inputs", str(_inputs(tmp_path / "in.npz")), "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["compare"]["passed"] is True, report["compare"]
    assert report["verdict"]["evidence"]["count"] == 2
