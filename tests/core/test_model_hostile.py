"""ONNX files that parse but hold what no exporter writes, built here: hostile external-data
entries, op types with "::", odd name-scope metadata, non-UTF-8 names, a node that feeds itself.
inspect, graph and support answer or say in one sentence what is wrong — never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.cli import main
from tests.core.test_cli import DEPLOYLENS
from tests.helpers.onnx_models import chain_model


def _with_external(folder: Path, location: str, **entries: str) -> Path:
    model = chain_model(4)
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value=location)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    ("location", "entries", "words"),
    [
        ("loop_a", {}, "symbolic link loop"),
        ("x" * 300, {}, "longer than a file name can be"),
        ("a\x00b", {}, "NUL byte"),
        ("weights.bin", {"offset": "abc"}, "offset 'abc': not a byte count"),
        ("weights.bin", {"length": "-1"}, "length '-1': not a byte count"),
        ("weights.bin", {"offset": "9" * 30}, "is 64 bytes but the model reads"),
        ("folder", {}, "not a regular file"),
        ("dangling", {}, "broken symbolic link"),
    ],
)
def test_hostile_external_data_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], location: str, entries: dict, words: str
) -> None:
    (tmp_path / "weights.bin").write_bytes(bytes(64))
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "folder").mkdir()
    path = _with_external(tmp_path, location, **entries)
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("deploylens: error: model.onnx: ") and words in err, err
    assert "Traceback" not in err


def _one_node(op_type: str, domain: str = "", scopes: str | None = None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node(op_type, ["x"], ["y"], "n0", domain=domain)
    if scopes is not None:
        node.metadata_props.add(key="pkg.torch.onnx.name_scopes", value=scopes)
    graph = helper.make_graph([node], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(
    "model",
    [
        _one_node("a::b"),
        _one_node("Relu::Conv", domain="custom"),
        _one_node("Relu", scopes="5"),
        _one_node("Relu", scopes="None"),
        _one_node("Relu", scopes=str([""] * 100_000)),
        _one_node("Relu", scopes="[" * 10_000 + "]" * 10_000),
    ],
    ids=["op_with_colons", "custom_op_with_colons", "scopes_int", "scopes_none",
         "scopes_huge_list", "scopes_10k_deep"],
)  # fmt: skip
def test_odd_op_types_and_scopes_open(
    model: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.onnx"
    onnx.save(model, str(path))
    for argv in (
        ["inspect", str(path)],
        ["graph", str(path), "--stats", "--expand", "3"],
        ["support", str(path), "--target", "ort-cpu", "--target", "trt-10.1"],
    ):
        assert main(argv) in (0, 1)
        err = capsys.readouterr().err
        assert "Traceback" not in err, (argv, err)


def test_a_name_that_is_not_utf8_is_said_up_front(tmp_path: Path) -> None:
    data = _one_node("Relu").SerializeToString().replace(b"n0", b"\xff\xfe")
    path = tmp_path / "garbled.onnx"
    path.write_bytes(data)
    from deploylens.core.errors import ModelLoadError
    from deploylens.core.model.loading import read_model

    with pytest.raises(ModelLoadError, match=r"garbled\.onnx .* not UTF-8"):
        read_model(path)


def test_onnx_native_crash_leaves_inspect_alive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """onnx's shape inference aborts the interpreter (a C++ assertion) on some malformed
    models; it runs in a forked child, so inspect still answers."""
    from deploylens.core.model import isolated

    def abort() -> None:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGABRT)

    result = isolated.run_isolated(abort)
    assert isinstance(result, isolated.Crashed) and result.reason == "SIGABRT"
    assert isolated.run_isolated(lambda: 41 + 1) == 42
    with pytest.raises(ZeroDivisionError):
        isolated.run_isolated(lambda: 1 / 0)
    # a real one: negative input dims make onnx 1.23's Slice inference fail an assertion
    from tests.conftest import REPO

    model = onnx.load(str(REPO / "resources" / "samples" / "roll_dims.dynamo.onnx"))
    for dim in model.graph.input[0].type.tensor_type.shape.dim:
        dim.dim_value = -1
    path = tmp_path / "negative_dims.onnx"
    onnx.save(model, str(path))
    assert main(["inspect", str(path)]) == 0  # it opens; the warning says what happened
    out = capsys.readouterr().out
    assert "shape inference" in out and ("crashed on this model (SIGABRT)" in out or "Slice" in out)


def test_a_node_that_feeds_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = chain_model(6)
    model.graph.node[2].input.append(model.graph.node[2].output[0])  # a cycle
    model.graph.node[0].input.append(model.graph.node[-1].output[0])
    path = tmp_path / "cycle.onnx"
    onnx.save(model, str(path))
    for argv in (["inspect", str(path)], ["graph", str(path), "--stats"]):
        assert main(argv) in (0, 1)
        assert "Traceback" not in capsys.readouterr().err


def test_a_closed_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    """``deploylens … | head`` printed a BrokenPipeError traceback, then exited 1, which failed
    ``set -o pipefail`` scripts such as the package smoke test's ``deploylens env | grep -q``."""
    model = chain_model(400)
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(4, np.float32), "spare"))
    path = tmp_path / "big.onnx"
    onnx.save(model, str(path))
    process = subprocess.Popen(
        [DEPLOYLENS, "graph", str(path), "--json", "--expand", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()  # what head does after its lines
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader that is already gone: the first write meets a closed pipe
    try:
        gone = subprocess.run([DEPLOYLENS, "env"], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=300)  # fmt: skip
    finally:
        os.close(write_end)
    assert gone.returncode == 0 and "Traceback" not in gone.stderr, gone.stderr


def test_a_native_crash_prints_the_lines_it_promises(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "The last lines it wrote are below." was followed by nothing on the CLI."""
    from deploylens.core import cli
    from deploylens.core.jobs import run_job
    from deploylens.core.model import summary

    monkeypatch.setattr(summary, "inspect_model", lambda *a, **k: run_job("selftest.segfault"))
    assert cli.main(["inspect", "whatever.onnx"]) == 1
    err = capsys.readouterr().err
    assert "crashed in native code (SIGSEGV)" in err
    assert "The worker's last lines:" in err and "| Fatal Python error: Segmentation fault" in err
