"""Opening a model file never runs code. Hostile ExportedProgram archives (a pickled sample input,
a weight or constant stored with ``use_pickle``, an opaque constant, the legacy layout) and
``.npy``/``.npz`` object arrays are built here; every way in — the loader, ``deploylens export``
and ``deploylens validate --torch`` — must refuse them with one sentence and leave no marker."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from deploylens.core.cli import main
from deploylens.core.errors import UserError
from deploylens.core.pytorch.pt2_archive import load_exported_program
from deploylens.core.pytorch.source import ModelSource, load_model

MODEL = Path(__file__).resolve().parents[2] / "resources" / "samples" / "small_cnn.dynamo.onnx"


class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).relu()


class _Payload:
    """Pickles as a call that creates ``marker``: what an attacker's file would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _pickled(obj: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _clean_archive(path: Path) -> Path:
    program = torch.export.export(_Tiny(), (torch.randn(1, 4),))
    torch.export.save(program, str(path))
    return path


def _rewrite(source: Path, target: Path, change) -> Path:
    """Copy the zip, letting ``change(name, data) -> data | None`` edit or drop entries."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = change(info.filename, old.read(info.filename))
            if data is not None:
                new.writestr(info.filename, data)
    return target


def _hostile(kind: str, tmp_path: Path, marker: Path) -> Path:
    clean = _clean_archive(tmp_path / "clean.pt2")
    payload = _pickled(_Payload(marker))

    def change(name: str, data: bytes) -> bytes | None:
        if kind == "sample_inputs" and "sample_inputs/" in name:
            return payload
        if kind in ("use_pickle", "opaque") and name.endswith("model_weights_config.json"):
            config = json.loads(data)
            entry = next(iter(config["config"].values()))
            entry["use_pickle"] = True
            if kind == "opaque":
                entry["use_pickle"] = False
                entry["path_name"] = "opaque_obj_0"
            return json.dumps(config).encode()
        if kind == "use_pickle" and name.endswith("data/weights/weight_0"):
            return payload
        return data

    if kind == "legacy":
        target = tmp_path / "legacy.pt2"
        with zipfile.ZipFile(target, "w") as archive:
            archive.writestr("version", "8.0")
            archive.writestr("serialized_exported_program.json", "{}")
            archive.writestr("serialized_state_dict.pt", payload)
        return target
    return _rewrite(clean, tmp_path / f"{kind}.pt2", change)


KINDS = ("sample_inputs", "use_pickle", "opaque", "legacy")


def test_the_hostile_archives_are_real(tmp_path: Path) -> None:
    """Without the guard, torch itself runs the pickled sample inputs: the attack works."""
    marker = tmp_path / "ran"
    archive = _hostile("sample_inputs", tmp_path, marker)
    try:
        torch.export.load(str(archive))
    except Exception:
        pass
    assert marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_loader_refuses_before_unpickling(kind: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    archive = _hostile(kind, tmp_path, marker)
    with pytest.raises(UserError) as caught:
        load_model(ModelSource("exported_program", str(archive)))
    assert not marker.exists()
    assert archive.name in caught.value.message and "pickle" in caught.value.message


def test_a_clean_archive_still_loads(tmp_path: Path) -> None:
    program = load_exported_program(_clean_archive(tmp_path / "clean.pt2"))
    out = program.module()(torch.ones(1, 4))
    assert out.shape == (1, 2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sample_inputs", "use_pickle"])
def test_cli_export_and_validate_refuse_hostile_archives(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real worker path: ``export X.pt2`` and ``validate … --torch X.pt2``."""
    marker = tmp_path / "ran"
    archive = _hostile(kind, tmp_path, marker)
    for argv in (
        ["export", str(archive), "--input", "x:1x4", "--out", str(tmp_path / "o.onnx")],
        ["validate", str(MODEL), "--torch", str(archive)],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "refuses pickled code" in err and "Traceback" not in err, err
        assert not marker.exists()
    assert not (tmp_path / "o.onnx").exists()


def test_object_arrays_are_refused_in_words(tmp_path: Path) -> None:
    """numpy's own "allow_pickle" sentence used to leak out as an internal error."""
    from deploylens.core.data.arrays import load_arrays

    objects = np.array([{"a": 1}, None], dtype=object)
    np.save(tmp_path / "objects.npy", objects, allow_pickle=True)
    np.savez(tmp_path / "objects.npz", x=objects)
    for name in ("objects.npy", "objects.npz"):
        with pytest.raises(UserError, match=f"{name} holds Python objects"):
            load_arrays(tmp_path / name)
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(UserError, match=r"junk\.npz is not a readable"):
        load_arrays(tmp_path / "junk.npz")
