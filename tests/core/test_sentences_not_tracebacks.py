"""Hostile inputs the security review ran into tracebacks or raw exception names ('Fail: …'),
each built here: every one ends in one sentence naming the file, exit status 1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))
SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "small_cnn.dynamo.onnx"
RAW = re.compile(r"deploylens: error: [A-Z][A-Za-z]*(Error|Exception|Fail|Graph|Argument)\b:")


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DEPLOYLENS, *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "DEPLOYLENS_NO_PROGRESS": "1"})  # fmt: skip


def _said(run: subprocess.CompletedProcess[str], *words: str) -> None:
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr and not RAW.search(run.stderr), run.stderr[-2000:]
    for word in words:
        assert word in run.stderr, (word, run.stderr[-2000:])


def _bad_graph(path: Path) -> Path:
    """A node reading a tensor nothing makes: onnx parses it, ONNX Runtime refuses the graph."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "ghost"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def test_deep_toml_settings_are_a_sentence(tmp_path: Path) -> None:
    settings = tmp_path / "deep.toml"
    settings.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    _said(_run("build", str(SAMPLE), "--settings", str(settings)), "deep.toml", "nested too deeply")


def test_non_utf8_steps_file_and_symlink_loop_model_are_sentences(tmp_path: Path) -> None:
    steps = tmp_path / "steps.toml"
    steps.write_bytes(b'[[steps]]\nop = "fold"\n# \xff\xfe\n')
    _said(_run("surgery", str(SAMPLE), "--steps", str(steps)), "steps.toml", "not UTF-8"[:3])
    (tmp_path / "a.onnx").symlink_to(tmp_path / "b.onnx")
    (tmp_path / "b.onnx").symlink_to(tmp_path / "a.onnx")
    _said(_run("surgery", str(tmp_path / "a.onnx"), "--fold"), "a.onnx", "loop")


def test_a_graph_onnx_runtime_refuses_is_a_sentence_naming_the_file(tmp_path: Path) -> None:
    model = _bad_graph(tmp_path / "ghost.onnx")
    _said(_run("validate", str(model)), "ghost.onnx", "ONNX Runtime")


def test_nan_calibration_data_is_a_sentence(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    x[0, 0, 0, 0] = np.nan
    for index in range(4):
        np.save(data / f"s{index}.npy", x)
    _said(_run("calibrate", str(SAMPLE), "--data", str(data), "--out", str(tmp_path / "q.onnx")),
          "s0.npy", "NaN")  # fmt: skip


@pytest.mark.parametrize("name", [b"caf\xe9.onnx", b"\xff\xfe.onnx"])
def test_a_model_name_that_is_not_utf8_is_a_sentence(tmp_path: Path, name: bytes) -> None:
    path = os.path.join(os.fsencode(tmp_path), name)
    with open(path, "wb") as handle:
        handle.write(SAMPLE.read_bytes())
    shown = os.fsdecode(path)
    for args in (["validate", shown], ["calibrate", shown, "--data", str(tmp_path)]):
        _said(_run(*args), "not UTF-8")


def test_huge_dims_and_recursive_functions_are_sentences_in_every_reader(tmp_path: Path) -> None:
    """A 2**62 input dimension and a local function calling itself: validate, surgery and
    calibrate each say what is wrong with the file (they ended in raw exception names)."""
    huge = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**62, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    onnx.save(helper.make_model(huge, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              tmp_path / "huge.onnx")  # fmt: skip
    local = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    recursive = helper.make_function(
        "local", "F", ["a"], ["b"], [helper.make_node("F", ["a"], ["b"], domain="local")], local
    )
    calls = helper.make_graph(
        [helper.make_node("F", ["x"], ["y"], domain="local")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(calls, opset_imports=local, functions=[recursive], ir_version=8)
    onnx.save(model, tmp_path / "recursive.onnx")
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "x.npy", np.ones((2, 4), np.float32))
    for name, said in (("huge.onnx", "too large"), ("recursive.onnx", "recursive")):
        path = str(tmp_path / name)
        runs = [
            ["validate", path],
            ["surgery", path, "--fold", "--out", str(tmp_path / "e.onnx")],
            ["calibrate", path, "--data", str(data), "--out", str(tmp_path / "q.onnx")],
        ]
        for args in runs:
            run = _run(*args)
            _said(run)
            assert name in run.stderr or "data/" in run.stderr, run.stderr  # the file at fault
            assert "ONNXRuntimeError" not in run.stderr and "onnxruntime_src" not in run.stderr
        assert (
            said in _run("validate", path).stderr or said in _run("surgery", path, "--fold").stderr
        )


def test_the_last_rounds_raw_sentences_are_sentences(tmp_path: Path) -> None:
    """Issue 44: surgery --fold of an opset-1 model ("AttributeError: 'NoneType' …
    opset_import"), calibrate on a zero-size .npy ("No data is collected."), a surgery step
    whose op or domain holds a newline (written into the model, exit 0), and a trtexec time of
    -1e308 (a NumPy overflow warning above the sentence)."""
    relu = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    old = tmp_path / "opset1.onnx"
    onnx.save(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 1)], ir_version=10),
              old)  # fmt: skip
    _said(_run("surgery", str(old), "--fold", "--out", str(tmp_path / "f.onnx")),
          "onnxslim could not fold this model", "opsets ai.onnx 1")  # fmt: skip
    empty = tmp_path / "empty.npy"
    np.save(empty, np.zeros((0, 3, 32, 32), np.float32))
    _said(_run("calibrate", str(SAMPLE), "--data", str(empty), "--out", str(tmp_path / "q.onnx")),
          "empty.npy gave no calibration samples")  # fmt: skip
    steps = tmp_path / "steps.toml"
    steps.write_text('[[steps]]\nop = "replace"\nnodes = ["node_relu"]\nnew_op = "Gelu\\nEvil"\n')
    run = _run("surgery", str(SAMPLE), "--steps", str(steps), "--out", str(tmp_path / "e.onnx"))
    _said(run, "is not one a runtime can look up")
    assert not (tmp_path / "e.onnx").exists()
    times = tmp_path / "times.json"
    times.write_text('[{"startComputeMs": 0, "endComputeMs": -1e308, "latencyMs": -1e308, '
                     '"computeMs": -1e308, "h2dMs": 0.1, "d2hMs": 0.1}]')  # fmt: skip
    run = _run("trace", str(times))
    _said(run, "outside what a trace holds")
    assert "RuntimeWarning" not in run.stderr and "overflow" not in run.stderr


def test_a_killed_writers_temp_file_is_swept_by_the_next_write(tmp_path: Path) -> None:
    """Issue 44: a CLI killed in ``build --build`` left an 8 MiB ``.out.engine.*.tmp`` no later
    build removed. A temp file names its process; the next atomic write beside it sweeps one
    whose process is gone and leaves a live one alone."""
    from deploylens.core.files import atomic_write_bytes

    engine = tmp_path / "out.engine"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    left = tmp_path / f".out.engine.{dead}.abc123.tmp"
    left.write_bytes(b"x" * 1024)
    live = tmp_path / f".out.engine.{os.getpid()}.def456.tmp"
    live.write_bytes(b"y")
    atomic_write_bytes(engine, b"plan")
    assert engine.read_bytes() == b"plan" and not left.exists() and live.exists()
