"""Reading a model with its large weights left in the mapped file (core/model/mapped_weights.py):
validate used to copy vit_b_16's 346 MB twice through ``onnx.load``. The model the reader gives,
with the mapped arrays put back, must be ``onnx.load``'s model exactly; a file it does not follow
exactly (truncated, bytes flipped, a text format) must go to ``onnx.load`` (``None``), never
become a model onnx would refuse. Every file is made here."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.model.mapped_weights import read_mapped
from deploylens.core.model.weightless import NOWHERE
from deploylens.core.validate.shared_weights import share_weights
from tests.core.test_shared_weights import WIDTH, full_session_outputs, mixed_weights_model
from tests.helpers.onnx_models import save_with_external_data


def restored(model: onnx.ModelProto, arrays: dict[str, np.ndarray]) -> onnx.ModelProto:
    """``model`` with each mapped tensor's bytes back inline, as ``onnx.load`` holds it."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in copy.graph.initializer:
        if tensor.name in arrays:
            del tensor.external_data[:]
            tensor.ClearField("data_location")
            tensor.raw_data = arrays[tensor.name].tobytes()
    return copy


def with_typed_weight(model: onnx.ModelProto) -> onnx.ModelProto:
    """A large weight stored as ``float_data`` (no raw bytes to map): it stays in the model."""
    typed = helper.make_tensor("typed", TensorProto.FLOAT, [WIDTH * WIDTH], [0.5] * WIDTH**2)
    model.graph.initializer.append(typed)
    return model


def test_mapped_weights_are_views_of_the_file_and_the_rest_is_what_onnx_loads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(with_typed_weight(mixed_weights_model()), str(path))
    read = read_mapped(path)
    assert read is not None
    assert sorted(read.arrays) == ["ints", "w16", "w32"]  # bf16, typed and the shape stay
    loaded = onnx.load(str(path))
    for name, array in read.arrays.items():
        tensor = next(t for t in loaded.graph.initializer if t.name == name)
        np.testing.assert_array_equal(array, numpy_helper.to_array(tensor))
        assert not array.flags.writeable and not array.flags.owndata  # the file's bytes
    mapped = {t.name: t for t in read.model.graph.initializer if t.name in read.arrays}
    assert all(t.external_data[0].value == NOWHERE and not t.raw_data for t in mapped.values())
    assert restored(read.model, read.arrays) == loaded


def test_a_session_over_the_mapped_weights_gives_the_full_models_outputs(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    model = mixed_weights_model()
    onnx.save(model, str(path))
    read = read_mapped(path)
    assert read is not None
    shared = share_weights(read.model, read.arrays)
    names = ["a", "b", "y"]
    session = ort.InferenceSession(
        shared.model_with_outputs(names),
        shared.add_to(ort.SessionOptions()),
        providers=["CPUExecutionProvider"],
    )
    feeds = {"x": np.random.default_rng(3).standard_normal((WIDTH, WIDTH)).astype(np.float32)}
    want = full_session_outputs(model, names, feeds)
    for got, expected in zip(session.run(names, feeds), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)  # two sessions


def test_external_weights_are_read_and_mapped_ones_left_alone(tmp_path: Path) -> None:
    """A file with some weights in an external data file: those are read from it, as
    ``onnx.load`` reads them; none is mapped (no inline bytes) and nothing looks for NOWHERE."""
    path = save_with_external_data(mixed_weights_model(), tmp_path / "ext.onnx")
    read = read_mapped(path)
    assert read is not None and read.arrays == {}
    read.external_tensors_loaded(tmp_path)
    assert read.model == onnx.load(str(path))


def test_mixed_inline_and_external_weights(tmp_path: Path) -> None:
    model = mixed_weights_model()
    onnx.save(model, str(tmp_path / "inline.onnx"))
    external = onnx.load(str(tmp_path / "inline.onnx"))
    w16 = next(t for t in external.graph.initializer if t.name == "w16")
    onnx.external_data_helper.set_external_data(w16, "w16.bin")
    (tmp_path / "w16.bin").write_bytes(w16.raw_data)
    w16.ClearField("raw_data")
    w16.data_location = TensorProto.EXTERNAL
    path = tmp_path / "mixed.onnx"
    onnx.save(external, str(path))
    read = read_mapped(path)
    assert read is not None and sorted(read.arrays) == ["ints", "w32"]
    read.external_tensors_loaded(tmp_path)
    assert restored(read.model, read.arrays) == onnx.load(str(path))


def test_a_file_the_walk_does_not_follow_goes_to_onnx_load(tmp_path: Path) -> None:
    """Truncated at every 5th byte, or one to three bytes flipped (300 times): the reader gives
    ``onnx.load``'s model or ``None``, never a model from bytes onnx refuses."""
    data = mixed_weights_model().SerializeToString()
    rng = random.Random(0)
    blobs = [data[:cut] for cut in range(0, len(data), 5)]
    for _ in range(300):
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        blobs.append(bytes(flipped))
    path = tmp_path / "bad.onnx"
    followed = 0
    for blob in blobs:
        path.write_bytes(blob)
        read = read_mapped(path)
        if read is None:
            continue
        followed += 1
        try:
            loaded = onnx.load(str(path))
        except Exception as exc:  # any refusal of onnx's is the finding
            pytest.fail(f"mapped a file onnx.load refuses: {exc}")
        assert restored(read.model, read.arrays) == loaded
    assert 0 < followed < len(blobs)


def test_text_formats_and_empty_files_are_left_to_onnx(tmp_path: Path) -> None:
    model = mixed_weights_model()
    onnx.save(model, str(tmp_path / "m.json"))  # onnx picks its JSON format from the suffix
    assert read_mapped(tmp_path / "m.json") is None
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert read_mapped(tmp_path / "empty.onnx") is None
