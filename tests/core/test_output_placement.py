"""Outputs nobody named go beside the user's model, never into the installation: surgery on a
bundled sample wrote its edited model into the install tree's samples folder, and the default
engine path pointed there too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploylens.core.outputs import beside, is_installation, outputs_dir, place
from deploylens.core.quantize.request import default_output as calibration_output
from deploylens.core.surgery.request import SurgeryRequest
from deploylens.core.trt.settings import default_engine


def test_a_users_model_gets_its_outputs_beside_it(tmp_path: Path) -> None:
    model = tmp_path / "net.onnx"
    model.write_bytes(b"")
    assert beside(model, ".engine") == str(tmp_path / "net.engine")
    assert default_engine(str(model)) == str(tmp_path / "net.engine")
    assert calibration_output(str(model), "entropy") == str(tmp_path / "net.entropy.qdq.onnx")
    assert SurgeryRequest(str(model)).output_path() == str(tmp_path / "net.edited.onnx")


def test_a_bundled_sample_gets_its_outputs_in_the_users_folder(samples: Path) -> None:
    assert is_installation(samples)
    sample = str(samples / "small_cnn.torchscript.onnx")
    for made in (
        default_engine(sample),
        calibration_output(sample, "minmax"),
        SurgeryRequest(sample).output_path(),
        place(samples, "model.onnx"),
    ):
        assert Path(made).parent == outputs_dir(), made
    assert outputs_dir().is_relative_to(os.environ["DEPLOYLENS_CONFIG_DIR"])  # tests: isolated


def test_the_interpreters_own_folders_are_the_installation() -> None:
    assert is_installation(Path(os.__file__).parent)
    assert is_installation(Path(pytest.__file__).parent)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_a_folder_we_may_not_write_sends_outputs_to_the_users_folder(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert Path(place(locked, "x.engine")).parent == outputs_dir()
    finally:
        locked.chmod(0o755)


def test_cli_surgery_on_a_bundled_sample_leaves_the_installation_untouched(
    samples: Path, tmp_path: Path
) -> None:
    """The real CLI, run on the real bundled sample: the samples folder is the same file set
    after, and the edited model and its steps file are in the outputs folder."""
    before = sorted(p.name for p in samples.iterdir())
    env = {**os.environ, "DEPLOYLENS_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-m", "deploylens.core.cli", "surgery",
         str(samples / "small_cnn.torchscript.onnx"), "--fold", "--no-tensorrt", "--no-compare"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in samples.iterdir()) == before
    edited = tmp_path / "config" / "outputs" / "small_cnn.torchscript.edited.onnx"
    assert edited.is_file() and edited.with_suffix(".steps.toml").is_file()
    shutil.rmtree(tmp_path / "config")
