"""The newest inputs held to the old standard (issue 63): integer ``--input`` ranges checked
against the dtype where they are typed, an ``.npz`` or ``--weights`` that would inflate past
any real data refused from the zip's directory before anything inflates, a damaged checkpoint
said as damaged (not "would run pickled code"), arrays no input takes listed as ignored, and
an embedding error naming the table the input feeds. Every file is made by the test."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.cli import main
from deploylens.core.data.arrays import load_arrays
from deploylens.core.errors import UserError
from deploylens.core.pytorch.source import parse_input

# (spec, what the sentence says): 29 specs outside what their dtype holds, or holding nothing
REFUSED = {
    "x:1x4:int8:-1000:1000": "outside what int8 holds",
    "x:1x4:int8:-129:0": "outside what int8 holds",
    "x:1x4:int8:0:128": "outside what int8 holds",
    "x:1x4:uint8:0:300": "outside what uint8 holds",
    "x:1x4:uint8:-1:10": "outside what uint8 holds",
    "x:1x4:uint8:0:256": "outside what uint8 holds",
    "x:1x4:int16:0:40000": "outside what int16 holds",
    "x:1x4:int16:-40000:0": "outside what int16 holds",
    "x:1x4:int32:0:1e10": "outside what int32 holds",
    "x:1x4:int32:-3e9:0": "outside what int32 holds",
    "x:1x4:int64:0:1e30": "outside what int64 holds",
    "x:1x4:int64:-1e30:0": "outside what int64 holds",
    "x:1x4:int64:0.5:0.7": "holds no whole number",
    "x:1x4:int32:0.1:0.9": "holds no whole number",
    "x:1x4:uint8:1.5:1.9": "holds no whole number",
    "x:1x4:int8:-0.5:-0.1": "holds no whole number",
    "x:1x4:bool:0:2": "outside what bool holds",
    "x:1x4:bool:-1:1": "outside what bool holds",
    "x:1x4:bool:0.2:0.8": "holds no whole number",
    "x:1x4:float16:0:70000": "outside what float16 holds",
    "x:1x4:float16:-1e5:0": "outside what float16 holds",
    "x:1x4:float32:0:1e39": "outside what float32 holds",
    "x:1x4:bfloat16:-1e39:0": "outside what bfloat16 holds",
    "x:1x4:float32:nan:1": "is empty",
    "x:1x4:float32:0:inf": "is empty",
    "x:1x4:int64:5:1": "is empty",
    "x:1x4:int64:a:b": "must be numbers",
    "x:1x4:int64:1e999:1e999": "is empty",
    "x:1x4:int8:-inf:0": "is empty",
}


def test_the_campaign_covers_29_specs() -> None:
    assert len(REFUSED) == 29


@pytest.mark.parametrize("spec", sorted(REFUSED))
def test_an_integer_spec_outside_its_dtype_is_one_sentence(spec: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_input(spec)
    assert REFUSED[spec] in caught.value.message and spec in caught.value.message


@pytest.mark.parametrize(
    "spec", ["x:1x4:int8:-128:127", "x:1x4:uint8:0:255", "x:1x4:int64:0.5:1.5", "x:1x4:bool:0:1"]
)
def test_ranges_within_the_dtype_pass(spec: str) -> None:
    assert parse_input(spec).low is not None


def _bomb(path: Path, members: int = 1, each: int = 1 << 28) -> Path:
    """An .npz whose arrays of zeros deflate ~1000x: under 1 MB on disk, 256 MiB inflated."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for index in range(members):
            with archive.open(f"a{index}.npy", "w", force_zip64=True) as member:
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header, {"descr": "<f4", "fortran_order": False, "shape": (each // 4,)}
                )
                member.write(header.getvalue())
                chunk = bytes(1 << 24)
                for _ in range(each // len(chunk)):
                    member.write(chunk)
    return path


def test_an_npz_bomb_is_refused_unread(tmp_path: Path) -> None:
    path = _bomb(tmp_path / "bomb.npz")
    assert path.stat().st_size < 2 << 20
    with pytest.raises(UserError, match="decompression bomb, refused unread"):
        load_arrays(path)


def test_weights_files_are_said_for_what_they_are(tmp_path: Path) -> None:
    """Truncated, empty and bomb ``--weights`` files were all "would run pickled code"."""
    torch = pytest.importorskip("torch")
    from deploylens.core.pytorch.source import _load_weights

    module = torch.nn.Linear(4, 2)
    good = tmp_path / "good.pt"
    torch.save(module.state_dict(), good)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    bomb = _bomb(tmp_path / "bomb.pt")
    evil = tmp_path / "evil.pt"
    torch.save({"f": print}, evil)
    said = {}
    for path in (cut, empty, bomb, evil):
        with pytest.raises(UserError) as caught:
            _load_weights(module, path)
        said[path.name] = caught.value.message
    assert "not a readable PyTorch checkpoint" in said["cut.pt"]
    assert "is empty" in said["empty.pt"]
    assert "decompression bomb" in said["bomb.pt"]
    assert "would run pickled code" in said["evil.pt"]
    assert not any("would run pickled code" in said[n] for n in ("cut.pt", "empty.pt", "bomb.pt"))
    _load_weights(module, good)


def test_unused_arrays_are_listed_as_ignored(
    tmp_path: Path, samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "extra.npz"
    np.savez(path, image=rng.random((1, 3, 32, 32), np.float32), labels=np.zeros(3), other=1.0)
    code = main(["validate", str(samples / "small_cnn.dynamo.onnx"), "--inputs", str(path),
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (
        "extra.npz: 2 array(s) no input of the model takes, ignored: 'labels', 'other'"
        in (report["notes"])
    )


@pytest.mark.parametrize("value", [3e38, float("nan")])
def test_calibration_data_the_model_overflows_on_is_one_sentence(
    tmp_path: Path, samples: Path, capsys: pytest.CaptureFixture[str], value: float
) -> None:
    """Data of 3e38 made ONNX Runtime's calibrator raise a raw ``ValueError: supplied range of
    [nan, nan] is not finite``."""
    data = tmp_path / "huge.npz"
    np.savez(data, image=np.full((4, 3, 32, 32), value, np.float32))
    code = main(["calibrate", str(samples / "small_cnn.dynamo.onnx"), "--data", str(data),
                 "--out", str(tmp_path / "q.onnx")])  # fmt: skip
    said = capsys.readouterr().err
    assert code == 1 and said.startswith("deploylens: error: huge.npz: ")  # one sentence, named
    assert "ValueError" not in said and not (tmp_path / "q.onnx").exists()
