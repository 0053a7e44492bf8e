"""Bad input gets one clear sentence, never a traceback or a crash."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import onnx
import pytest

from deploylens.core.errors import ModelLoadError
from deploylens.core.model.loading import read_model
from deploylens.core.model.summary import inspect_model
from tests.helpers.onnx_models import chain_model


def _one_sentence(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith(".")


def _expect(path: Path, *fragments: str) -> None:
    with pytest.raises(ModelLoadError) as caught:
        read_model(path)
    _one_sentence(caught.value.message)
    for fragment in fragments:
        assert fragment in caught.value.message


def test_missing_file(tmp_path: Path) -> None:
    _expect(tmp_path / "nope.onnx", "does not exist")


def test_folder(tmp_path: Path) -> None:
    _expect(tmp_path, "is a folder")


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.onnx").write_bytes(b"")
    _expect(tmp_path / "empty.onnx", "is empty (0 bytes)")


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "random.onnx"
    path.write_bytes(os.urandom(4096) + b"\xff" * 64)
    with pytest.raises(ModelLoadError) as caught:
        read_model(path)
    _one_sentence(caught.value.message)
    assert "random.onnx" in caught.value.message


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.99])
def test_truncated_protobuf(tmp_path: Path, samples: Path, fraction: float) -> None:
    data = (samples / "small_cnn.dynamo.onnx").read_bytes()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: int(len(data) * fraction)])
    _expect(path, "truncated.onnx")


def test_pytorch_checkpoint_renamed_onnx(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    with zipfile.ZipFile(path, "w") as archive:  # what torch.save writes
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    _expect(path, "zip archive", "PyTorch", "export it to ONNX first")


def test_real_torch_save_renamed_onnx(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "weights.onnx"
    torch.save({"w": torch.zeros(2)}, path)
    _expect(path, "PyTorch")


def test_old_pickle_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "legacy.onnx"
    path.write_bytes(b"\x80\x02}q\x00(X\x01\x00\x00\x00wq\x01K\x01u.")
    _expect(path, "pickle")


def test_json_file(tmp_path: Path) -> None:
    path = tmp_path / "profile.onnx"
    path.write_text('[{"name": "x"}]')
    _expect(path, "text file")


def test_other_protobuf_message(artifacts: Path) -> None:
    """A TensorProto (.pb from the onnx backend tests) parses as protobuf but is no model."""
    tensor = next(
        (artifacts / "onnx-pip-1.21.0-backend-test-data" / "node").glob(
            "test_*/test_data_set_0/input_0.pb"
        )
    )
    with pytest.raises(ModelLoadError) as caught:
        read_model(tensor)
    _one_sentence(caught.value.message)


def test_unsupported_ir_version(tmp_path: Path) -> None:
    model = chain_model(2)
    model.ir_version = onnx.IR_VERSION + 5
    path = tmp_path / "future.onnx"
    path.write_bytes(model.SerializeToString())
    _expect(path, f"IR version {onnx.IR_VERSION + 5}", "upgrade onnx")


def test_missing_external_data_opens_with_a_problem(tmp_path: Path) -> None:
    from tests.helpers.onnx_models import save_with_external_data, weighty_model

    path = save_with_external_data(weighty_model(3, 100), tmp_path / "m.onnx")
    (tmp_path / "weights.bin").unlink()
    summary = inspect_model(path)
    assert summary.external_data[0].present is False
    assert summary.problems == [
        f"external data file 'weights.bin' is missing (looked in {tmp_path})"
    ]


def test_truncated_external_data_is_a_problem(tmp_path: Path) -> None:
    from tests.helpers.onnx_models import save_with_external_data, weighty_model

    path = save_with_external_data(weighty_model(3, 100), tmp_path / "m.onnx")
    weights = tmp_path / "weights.bin"
    weights.write_bytes(weights.read_bytes()[:500])
    (problem,) = inspect_model(path).problems
    assert "is 500 bytes but the model reads up to byte 1,200" in problem


def test_external_data_outside_the_model_folder_is_a_problem(tmp_path: Path) -> None:
    from tests.helpers.onnx_models import weighty_model

    model = weighty_model(1, 10)
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    path = tmp_path / "escape.onnx"
    path.write_bytes(model.SerializeToString())
    (problem,) = inspect_model(path).problems
    assert "points outside the model's folder" in problem
