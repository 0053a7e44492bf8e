"""Output validation: tolerances as data, statistics, real runs against PyTorch and ORT."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.errors import UserError
from deploylens.core.export.plugin_api import plugin_entries
from deploylens.core.export.settings import ExportSettings
from deploylens.core.export.sources import parse_spec
from deploylens.core.jobs import Worker
from deploylens.core.validate.compare import compare
from deploylens.core.validate.tolerances import Tolerances, parse_tolerance
from tests.helpers.perturb import perturb_first


def test_an_element_fails_only_when_both_abs_and_rel_exceed() -> None:
    tol = Tolerances(rtol={"": 1e-3}, atol={"": 1e-3})
    want = np.array([1000.0, 1e-6, 1.0])
    got = want + np.array([0.5, 5e-4, 0.0])  # abs too big but rel fine; rel too big but abs fine
    assert compare("y", got, want, tol).passed
    got[2] += 0.01  # both exceed
    result = compare("y", got, want, tol)
    assert not result.passed and result.within == pytest.approx(2 / 3)


def test_nan_is_a_mismatch_unless_both_sides_have_it() -> None:
    tol = Tolerances()
    assert not compare("y", np.array([np.nan, 1.0]), np.array([0.0, 1.0]), tol).passed
    both = compare("y", np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), tol)
    assert both.passed and both.nan == 0


def test_per_output_tolerances_and_statistics() -> None:
    rtol = parse_tolerance(["1e-6", "logits:0.1"], 1e-5)
    assert rtol == {"": 1e-6, "logits": 0.1}
    tol = Tolerances(rtol=rtol, atol={"": 1e-9})
    want = np.ones(100)
    got = want.copy()
    got[0] += 0.05
    assert compare("logits", got, want, tol).passed
    assert not compare("other", got, want, tol).passed
    median = Tolerances(rtol={"": 1e-6}, atol={"": 1e-9}, statistic="median")
    assert compare("other", got, want, median).passed  # one outlier, the median is exact
    with pytest.raises(UserError):
        Tolerances(statistic="mode")
    assert not compare("y", np.ones(3), np.ones(4), tol).passed


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("resnet") / "resnet18.onnx"
    with Worker() as worker:
        result = worker.run(
            "export.run",
            {
                "source": parse_spec("torchvision:resnet18").to_dict(),
                "settings": ExportSettings(exporter="dynamo", opset=18, output=str(out)).to_dict(),
            },
        )
    assert result["ok"]
    return out


def run_validate(*args: str) -> subprocess.CompletedProcess[str]:
    from tests.core.test_cli import DEPLOYLENS

    return subprocess.run(
        [DEPLOYLENS, "validate", *args], capture_output=True, text=True, timeout=300
    )


def test_resnet18_dynamo_matches_torch_at_1e_4(resnet18: Path) -> None:
    result = run_validate(
        str(resnet18), "--torch", "torchvision:resnet18", "--rtol", "1e-4", "--atol", "1e-4"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS: ONNX Runtime (CPU) vs PyTorch eager")


def test_perturbed_conv_fails(resnet18: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    perturb_first(resnet18, broken)
    result = run_validate(
        str(broken), "--torch", "torchvision:resnet18", "--rtol", "1e-4", "--atol", "1e-4", "--json"
    )
    assert result.returncode == 1
    import json

    (output,) = json.loads(result.stdout)["outputs"]
    assert not output["passed"] and output["max_abs"] > 1e-3


def test_onnx_only_mode_and_npz_inputs(samples: Path, tmp_path: Path) -> None:
    with np.load(samples / "small_cnn.inputs.npz") as data:
        np.savez(tmp_path / "in.npz", image=data["image"])
    result = run_validate(
        str(samples / "small_cnn.dynamo.onnx"), "--inputs", str(tmp_path / "in.npz")
    )
    assert result.returncode == 0
    assert "vs ONNX Runtime, graph optimizations off" in result.stdout
    assert "image [1, 3, 32, 32]" in result.stdout


def test_plugin_model_validates_through_the_reference_op(tmp_path: Path) -> None:
    out = tmp_path / "dc.onnx"
    with Worker() as worker:
        exported = worker.run(
            "export.run",
            {
                "source": parse_spec("sample:deform_conv").to_dict(),
                "settings": ExportSettings(
                    exporter="torchscript", opset=17, output=str(out), plugins=["deform_conv2d"]
                ).to_dict(),
                "plugin_entries": plugin_entries(),
            },
        )
        assert exported["ok"]
        result = worker.run(
            "validate.outputs",
            {
                "path": str(out),
                "torch": parse_spec("sample:deform_conv").to_dict(),
                "tolerances": {"rtol": {"": 1e-5}, "atol": {"": 1e-5}},
                "plugin_entries": plugin_entries(),
            },
        )
    assert result["passed"] and result["outputs"][0]["max_abs"] <= 1e-5
