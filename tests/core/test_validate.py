"""Output validation: tolerances as data, statistics, real runs against PyTorch and ORT."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deploylens.core.errors import UserError
from deploylens.core.export.settings import ExportSettings
from deploylens.core.jobs import Worker
from deploylens.core.plugin_api import plugin_entries
from deploylens.core.pytorch.source import parse_spec
from deploylens.core.validate.compare import compare
from deploylens.core.validate.records import Layerwise
from deploylens.core.validate.request import ValidateRequest
from deploylens.core.validate.result import ValidationResult
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


@pytest.mark.parametrize("odd", [np.nan, np.inf, -np.inf])
def test_the_largest_value_of_each_side_is_its_largest_finite_one(odd: float) -> None:
    """The scale check reads each side's largest finite |value|: a NaN or inf is not the scale
    (the fast path takes two reductions and must fall back when either is not finite)."""
    got = np.array([odd, -5.0, 2.0], np.float32)
    want = np.array([-0.0, -0.0, 0.0], np.float32)
    c = compare("y", got, want, Tolerances())
    assert c.got_max_abs == 5.0
    assert c.ref_max_abs == 0.0 and str(c.ref_max_abs) == "0.0"  # not "-0.0" in the report
    assert compare("y", want, want, Tolerances()).ref_max_abs == 0.0


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
    # Tolerances read as a person writes them, not as the dict that holds them.
    assert "tolerances: rtol 0.0001, atol 0.0001 (elemwise)" in result.stdout
    assert "{''" not in result.stdout


def test_per_output_tolerances_read_as_written() -> None:
    from deploylens.core.validate.result import per_output_text

    assert per_output_text({"": 1e-4}) == "0.0001"
    assert per_output_text({"": 1e-4, "logits": 1e-3}) == "0.0001 (logits 0.001)"
    assert per_output_text({"boxes": 0.5}) == "boxes 0.5"


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
        result = worker.run_request(
            ValidateRequest.from_params({
                "path": str(out),
                "torch": parse_spec("sample:deform_conv").to_dict(),
                "tolerances": {"rtol": {"": 1e-5}, "atol": {"": 1e-5}},
                "plugin_entries": plugin_entries(),
                "layerwise": True,
            })
        )  # fmt: skip
    assert result.passed and result.outputs[0].max_abs <= 1e-5
    lw = layerwise_of(result)  # the custom op's own tensor is compared too, through its reference
    assert lw.first_diverging is None and "deform_conv2d" in {x.op_type for x in lw.layers}


# --- layer-wise ---------------------------------------------------------------------------


def test_torchscript_names_parse_into_module_calls() -> None:
    from deploylens.core.validate.mapping import torchscript_chain

    modules = {"layer1", "layer1.0", "layer1.0.relu", "layer2.0.downsample.0", "layer2"}
    modules |= {"layer2.0", "layer2.0.downsample"}
    assert torchscript_chain("/layer1/layer1.0/relu_1/Relu", modules) == [
        ("layer1", 0),
        ("layer1.0", 0),
        ("layer1.0.relu", 1),
    ]
    assert torchscript_chain("/layer2/layer2.0/downsample/downsample.0/Conv", modules)[-1] == (
        "layer2.0.downsample.0",
        0,
    )
    assert torchscript_chain("Identity_3", modules) == []


def run_layerwise(
    path: Path, spec: str | None, tol: float = 1e-4, **extra: object
) -> ValidationResult:
    params: dict[str, object] = {
        "path": str(path),
        "tolerances": {"rtol": {"": tol}, "atol": {"": tol}},
        "layerwise": True,
        **extra,
    }
    if spec:
        params["torch"] = parse_spec(spec).to_dict()
    with Worker() as worker:
        found: ValidationResult = worker.run_request(ValidateRequest.from_params(params))
    return found


def layerwise_of(result: ValidationResult) -> Layerwise:
    assert result.layerwise is not None, "asked for layer-wise, got none"
    return result.layerwise


def export_resnet18(out: Path, **settings: Any) -> Path:
    with Worker() as worker:
        result = worker.run(
            "export.run",
            {
                "source": parse_spec("torchvision:resnet18").to_dict(),
                "settings": ExportSettings(output=str(out), **settings).to_dict(),
            },
        )
    assert result["ok"]
    return out


def test_layerwise_dynamo_without_optimization_maps_all_75_activations(tmp_path: Path) -> None:
    path = export_resnet18(tmp_path / "r18.onnx", exporter="dynamo", opset=18, optimize=False)
    result = run_layerwise(path, "torchvision:resnet18")
    lw = layerwise_of(result)
    assert result.passed and lw.mapping == "dynamo"
    assert lw.mapped_calls == 75 and lw.unmapped == []  # every module call but the root
    assert lw.first_diverging is None
    modules = {layer.module for layer in lw.layers}
    assert {"layer1.0.relu", "layer1.0.relu#1", "fc"} <= modules  # a reused ReLU twice
    # one row per tensor: a parent whose output is its last child's is named in that row's note
    assert len({layer.tensor for layer in lw.layers}) == len(lw.layers)
    assert "layer4" not in modules
    assert any("layer4" in layer.note.split("also the output of ")[-1].split(", ")
               for layer in lw.layers)  # fmt: skip


def test_layerwise_torchscript_reports_folded_batch_norms(tmp_path: Path) -> None:
    path = export_resnet18(tmp_path / "r18ts.onnx", exporter="torchscript", opset=17)
    lw = layerwise_of(run_layerwise(path, "torchvision:resnet18"))
    assert lw.mapping == "torchscript" and lw.first_diverging is None
    reasons = {item.module: item.reason for item in lw.unmapped}
    assert reasons["layer1.0.conv1"].startswith("batch norm layer1.0.bn1 folded into")
    assert len(reasons) == 20  # the 20 convs followed by a batch norm; everything else maps
    bn1 = next(layer for layer in lw.layers if layer.module == "bn1")
    assert bn1.node == "/conv1/Conv" and bn1.passed


def test_first_diverging_node_is_the_perturbed_conv(resnet18: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    perturbed = perturb_first(resnet18, broken)
    result = run_layerwise(broken, "torchvision:resnet18")
    lw = layerwise_of(result)
    assert not result.passed
    assert lw.first_diverging is not None and lw.first_diverging.node == perturbed
    errors = result.node_errors()
    layers = lw.layers
    start = next(i for i, layer in enumerate(layers) if layer.node == perturbed)
    downstream = [errors[layer.node] for layer in layers[start:]]
    assert min(downstream) > 1e-2  # the error reaches every later node
    assert not any(layer.passed for layer in layers[start:])
    ranked = max(layers, key=lambda layer: layer.jump)
    assert ranked.node == perturbed  # where the error is made, not merely carried


def test_fp16_conversion_fails_tight_and_ranks_where_error_jumps(
    resnet18: Path, tmp_path: Path
) -> None:
    import warnings

    import onnx
    from onnxconverter_common import float16

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns for every weight it rounds
        half = float16.convert_float_to_float16(onnx.load(str(resnet18)), keep_io_types=True)
    onnx.save(half, str(tmp_path / "fp16.onnx"))
    result = run_layerwise(tmp_path / "fp16.onnx", "torchvision:resnet18")
    lw = layerwise_of(result)
    assert not result.passed and lw.first_diverging is not None
    assert lw.mapped_calls == 55  # the converter kept the exporter's scopes
    jumps = sorted(lw.layers, key=lambda layer: -layer.jump)
    assert jumps[0].jump > 1e-4 and jumps[0].op_type in {"Conv", "Gemm", "MatMul"}
    assert 1e-5 < max(layer.rel_l2 for layer in lw.layers) < 1e-2  # fp16, not broken
    loose = run_layerwise(tmp_path / "fp16.onnx", "torchvision:resnet18", tol=1e-2)
    assert loose.passed


def test_onnx_only_layerwise_and_chunking_give_the_same_table(samples: Path) -> None:
    path = samples / "small_cnn.dynamo.onnx"
    one = layerwise_of(run_layerwise(path, None))
    many = layerwise_of(run_layerwise(path, None, budget_mb=0.01))
    assert one.mode == "onnx tensors" and one.first_diverging is None
    assert one.chunks == 1 and many.chunks > 3
    key = [(layer.tensor, layer.max_abs) for layer in one.layers]
    assert key == [(layer.tensor, layer.max_abs) for layer in many.layers]


def test_pytorch_outputs_stay_in_memory_up_to_the_budget_and_only_the_rest_is_spilled(
    tmp_path: Path,
) -> None:
    """The layer-wise hooks keep PyTorch's outputs in memory until they hold the budget and
    write only the later ones to disk (vit_b_16's all went to disk although they fit: ~0.4 s
    of CPU writing and mapping them back); what is compared is the same either way."""
    import torch

    from deploylens.core.validate.layerwise import TorchCapture, _load

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh()
    ).eval()
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)}
    _, in_memory, _ = TorchCapture(model).run(feeds, keep_all=True)
    one = 2 * 16 * 4  # bytes of each output
    for hold, on_disk in ((0, 4), (2 * one, 2), (4 * one, 0)):
        spill = tmp_path / f"hold{hold}"
        spill.mkdir()
        _, kept, _ = TorchCapture(model).run(feeds, spill=spill, keep_all=True, hold=hold)
        assert [key for key, v in kept.items() if isinstance(v, Path)] == list(kept)[4 - on_disk :]
        assert len(list(spill.iterdir())) == on_disk
        assert kept.keys() == in_memory.keys()
        for key, array in in_memory.items():
            loaded = _load(kept[key])
            assert loaded is not None and np.array_equal(loaded, array), key


def test_results_save_reopen_and_csv(resnet18: Path, tmp_path: Path) -> None:
    import csv
    import json

    saved = tmp_path / "result.json"
    table = tmp_path / "layers.csv"
    first = run_validate(
        str(resnet18), "--torch", "torchvision:resnet18", "--layerwise", "--rtol", "1e-4",
        "--atol", "1e-4", "--save", str(saved), "--csv", str(table),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 40 and rows[0]["module"] == "bn1"  # one row per tensor (55 with parents)
    reopened = run_validate("--open", str(saved))
    assert reopened.returncode == 0 and reopened.stdout == first.stdout
    saved.write_text(json.dumps({"kind": "something else"}))
    bad = run_validate("--open", str(saved))
    assert bad.returncode != 0 and "not a DeployLens validation result" in bad.stderr
    saved.write_text('{"kind": "deploylens.validation", "outp')
    assert "not a readable validation result" in run_validate("--open", str(saved)).stderr


NORM_ACT = '''
import torch


class BatchNormAct2d(torch.nn.BatchNorm2d):
    """timm's kind: the norm runs its own drop and activation modules (their hooks fire first)."""

    def __init__(self, channels, act=True):
        super().__init__(channels)
        self.drop = torch.nn.Identity()
        self.act = torch.nn.SiLU() if act else torch.nn.Identity()

    def forward(self, x):
        return self.act(self.drop(super().forward(x)))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3)
        self.bn1 = BatchNormAct2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 1)
        self.bn2 = BatchNormAct2d(8, act=False)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.bn2(self.conv2(self.bn1(self.conv1(x))))
        return self.head(y.mean((2, 3)))


def block():
    torch.manual_seed(0)
    model = Block().eval()
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    return model, (torch.rand(1, 3, 12, 12),)
'''


def test_a_conv_before_a_norm_with_its_own_activation_is_not_a_divergence(
    tmp_path: Path,
) -> None:
    """Issue 43: timm's ConvNormAct (a BatchNormAct2d whose drop/act hooks fire before the
    norm's) exported with TorchScript folds the norm into the conv: the conv's tensor holds
    the norm's output, and layer-wise called it "first diverging" at rel L2 1. A right export
    has no diverging layer; the conv is reported folded."""
    from deploylens.core.consent import grant_consent

    source = tmp_path / "norm_act.py"
    source.write_text(NORM_ACT)
    grant_consent(str(source))
    out = tmp_path / "block.onnx"
    with Worker() as worker:
        made = worker.run("export.run", {
            "source": parse_spec(f"{source}:block").to_dict(),
            "settings": ExportSettings(output=str(out), exporter="torchscript").to_dict(),
        })  # fmt: skip
    assert made["ok"], made
    lw = layerwise_of(run_layerwise(out, f"{source}:block"))
    assert lw.first_diverging is None, lw.first_diverging
    reasons = {item.module: item.reason for item in lw.unmapped}
    assert "folded" in reasons["conv2"] and "folded" in reasons["conv1"], reasons


def test_layerwise_runs_pytorch_once_and_judges_the_outputs_alike(resnet18: Path) -> None:
    """The layer-wise pass's hooked forward gives the outputs comparison its PyTorch outputs on
    the first batch (a second forward was 0.5 s of CPU on vit_b_16): one root call, and the
    outputs' statistics are those of validating without the layer-wise pass."""
    import torch
    import torchvision

    from deploylens.core.validate.run import validate_outputs

    roots: list[str] = []

    def count(module: Any, _args: Any, _output: Any) -> None:
        if isinstance(module, torchvision.models.ResNet):
            roots.append(type(module).__name__)

    source = parse_spec("torchvision:resnet18")
    handle = torch.nn.modules.module.register_module_forward_hook(count)
    try:
        both = validate_outputs(str(resnet18), source, "", Tolerances(), layerwise=True)
        with_layers = len(roots)
        alone = validate_outputs(str(resnet18), source, "", Tolerances())
    finally:
        handle.remove()
    assert with_layers == 1 and len(roots) == 2
    assert both.layerwise is not None and both.layerwise.compared > 0
    assert both.passed and alone.passed
    assert len(both.outputs) == len(alone.outputs) == 1
    one, other = both.outputs[0].to_dict(), alone.outputs[0].to_dict()
    for key, value in one.items():  # the same statistics; floats to rounding, not bit for bit
        if isinstance(value, float):
            assert value == pytest.approx(other[key], rel=1e-6, abs=1e-12, nan_ok=True), key
        else:
            assert value == other[key], key
