"""Two different models must never PASS. Random-weight networks give outputs ~1e-9, where an
``atol`` of 1e-5 absorbs any difference: ``validate mnv2.onnx --torch
torchvision:efficientnet_b0`` used to PASS (cosine 0.045). Every model here is built by the test."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.cli import main
from deploylens.core.validate.compare import Comparator, compare, judge_scale
from deploylens.core.validate.tolerances import Tolerances


def _judged(got: np.ndarray, want: np.ndarray, tol: Tolerances | None = None):
    tol = tol or Tolerances()
    result = compare("y", got, want, tol)
    judge_scale(result, tol)
    return result


def test_outputs_below_atol_are_judged_by_their_relative_error() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1e-9, 1000), rng.normal(0, 1e-9, 1000)  # unrelated
    assert compare("y", a, b, Tolerances()).passed  # the element check alone: PASS (the bug)
    judged = _judged(a, b)
    assert not judged.passed and "the outputs differ" in judged.reason
    assert _judged(a, a.copy()).passed  # identical outputs: agreement, whatever their size
    assert _judged(a * (1 + 1e-7), a).passed  # the same up to rounding: agreement too


def test_only_essentially_zero_outputs_are_inconclusive() -> None:
    zeros = np.zeros(100, np.float32)
    for got, want in ((zeros, zeros.copy()), (zeros + 1e-35, zeros)):
        judged = _judged(got, want)
        assert not judged.passed and judged.reason.startswith("inconclusive")
        assert "--inputs" in judged.reason  # what to do


def test_atol_sized_outputs_that_differ_fail_on_rel_l2() -> None:
    rng = np.random.default_rng(1)
    want = rng.normal(0, 2e-4, 1000)  # around the default atol (1e-4)
    got = want + rng.uniform(-8e-5, 8e-5, 1000)  # ~25 % noise, every element within atol
    assert compare("y", got, want, Tolerances()).passed
    judged = _judged(got, want)
    assert not judged.passed and "rel L2" in judged.reason and "the outputs differ" in judged.reason


def test_real_agreement_still_passes_and_rel_l2_follows_rtol() -> None:
    rng = np.random.default_rng(2)
    want = rng.normal(0, 3, 10_000).astype(np.float32)
    assert _judged(want + np.float32(1e-7) * want, want).passed  # FP32 noise
    fp16 = want.astype(np.float16).astype(np.float32)
    loose = Tolerances(rtol={"": 2e-2}, atol={"": 2e-2})
    assert _judged(fp16, want, loose).passed
    strict = Tolerances(rtol={"": 2e-2}, atol={"": 2e-2}, rel_l2={"": 1e-5})
    assert not _judged(fp16, want, strict).passed  # an explicit rel L2 limit wins


def test_batches_accumulate_into_one_verdict() -> None:
    """A folder is compared in full: a bad last batch fails the output."""
    tol = Tolerances()
    comparator = Comparator("y", tol)
    good = np.ones((2, 4), np.float32)
    comparator.add(good, good)
    comparator.add(good, good)
    comparator.add(good + 1, good)
    result = comparator.result()
    assert result.shape == [6, 4] and result.batches == 3 and not result.passed


FACTORY = """
import torch

class Tiny(torch.nn.Module):
    def __init__(self, seed, scale, out=2):
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(16, out)
        with torch.no_grad():
            self.linear.weight.mul_(scale)
            self.linear.bias.mul_(scale)

    def forward(self, x):
        return self.linear(x)

def model_a():
    return Tiny(0, {scale}), (torch.rand(1, 16),)

def model_b():
    return Tiny(1, {scale}), (torch.rand(1, 16),)

def model_wide():
    return Tiny(0, {scale}, out=3), (torch.rand(1, 16),)
"""


def _models(tmp_path: Path, scale: float) -> tuple[Path, Path]:
    import torch

    source = tmp_path / "models.py"
    source.write_text(textwrap.dedent(FACTORY.format(scale=scale)))
    namespace: dict[str, object] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    module, inputs = namespace["model_a"]()  # type: ignore[operator]
    onnx_path = tmp_path / "a.onnx"
    torch.onnx.export(module, inputs, str(onnx_path), dynamo=False, input_names=["input"])
    return onnx_path, source


@pytest.mark.slow
def test_validate_refuses_two_different_tiny_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    onnx_path, source = _models(tmp_path, 1e-9)
    code = main(["validate", str(onnx_path), "--torch", f"{source}:model_b", "--trust", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and not result["passed"]
    assert "the outputs differ" in result["outputs"][0]["reason"]


@pytest.mark.slow
def test_validate_passes_the_same_model_and_fails_a_different_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    onnx_path, source = _models(tmp_path, 1.0)
    assert main(["validate", str(onnx_path), "--torch", f"{source}:model_a", "--trust"]) == 0
    assert main(["validate", str(onnx_path), "--torch", f"{source}:model_b", "--trust"]) == 1
    out = capsys.readouterr().out
    assert out.count("PASS") == 1 and out.count("FAIL") == 1


@pytest.mark.slow
def test_shape_mismatch_is_a_verdict_not_a_protocol_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its statistics are NaN; refusing NaN on the worker protocol lost the whole answer."""
    onnx_path, source = _models(tmp_path, 1.0)
    code = main(["validate", str(onnx_path), "--torch", f"{source}:model_wide", "--trust"])
    captured = capsys.readouterr()
    assert code == 1 and "shape [1, 2] vs expected [1, 3]" in captured.out
    assert "non-JSON" not in captured.err and "Traceback" not in captured.err


@pytest.mark.slow
def test_the_issue_case_mobilenet_v2_against_efficientnet_b0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exact reports: torchvision random weights, two different architectures FAIL, and the
    same architecture — export, then validate against it — PASSes (its outputs are ~1e-15:
    it read 'inconclusive' and exit 1)."""
    assert main(["export", "torchvision:mobilenet_v2", "--exporter", "torchscript",
                 "--out", str(tmp_path / "mnv2.onnx")]) == 0  # fmt: skip
    capsys.readouterr()
    code = main(["validate", str(tmp_path / "mnv2.onnx"), "--torch", "torchvision:efficientnet_b0"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL" in out and "PASS" not in out
    assert "random weights" in out
    same = main(["validate", str(tmp_path / "mnv2.onnx"), "--torch", "torchvision:mobilenet_v2"])
    out = capsys.readouterr().out
    assert same == 0 and out.startswith("PASS"), out


def test_a_name_that_is_not_a_torchvision_model(capsys: pytest.CaptureFixture[str]) -> None:
    """``torchvision.models.resnet`` is a module: it was called as a builder and raised."""
    from deploylens.core.errors import UserError
    from deploylens.core.pytorch.source import ModelSource, load_model

    for name in ("resnet", "utils", "nosuchnet"):
        with pytest.raises(UserError, match=f"has no model '{name}'"):
            load_model(ModelSource("torchvision", name))


def test_a_data_folder_is_compared_in_full_and_says_so(samples: Path, tmp_path: Path) -> None:
    """``--inputs DIR`` compared only its first batch, silently."""
    from deploylens.core.validate.run import validate_outputs

    folder = tmp_path / "arrays"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for index in range(5):
        np.save(folder / f"{index}.npy", rng.uniform(0, 1, (3, 32, 32)).astype(np.float32))
    result = validate_outputs(
        str(samples / "small_cnn.dynamo.onnx"), None, str(folder), Tolerances()
    )
    assert result.batches == 5 and result.samples == 5
    assert result.outputs[0].shape[0] == 5  # every batch went into the statistics
    assert result.inputs_used == f"all 5 samples of {folder} in 5 batches"
    assert result.inputs_used in result.summary()


def test_a_headline_never_says_a_bare_pass_over_a_diverging_layer(samples: Path) -> None:
    """One verdict method: the CLI's exit code and the panel's headline and colour."""
    from dataclasses import replace

    from deploylens.core.results import Verdict
    from deploylens.core.validate.result import within_text
    from deploylens.core.validate.run import validate_outputs

    base = validate_outputs(str(samples / "small_cnn.dynamo.onnx"), None, "", Tolerances(),
                            layerwise=True)  # fmt: skip
    assert base.layerwise is not None and base.first_diverging is None

    def said(verdict: Verdict) -> Verdict:  # the headline, without what it rests on
        assert verdict.evidence is not None and verdict.evidence.count == 1  # one output
        return replace(verdict, evidence=None)

    assert said(base.verdict()) == Verdict("PASS", "pass", 0)
    layers = replace(base.layerwise, first_diverging=base.layerwise.layers[0])
    diverging = replace(base, layerwise=layers)
    assert said(diverging.verdict()) == Verdict("PASS (outputs) — LAYERS DIFFER", "warn", 0)
    assert said(replace(base, passed=False).verdict()) == Verdict("FAIL", "fail", 1)
    # a layer-wise run that compared no tensor is no evidence of "no layer diverges"
    nothing = replace(base, layerwise=replace(base.layerwise, compared=0, first_diverging=None))
    assert nothing.verdict().exit_code == 3 and "LAYER-WISE INCONCLUSIVE" in nothing.verdict().word
    # rounded down: a failing row never reads 100 %
    assert within_text(0.99996) == "99.99 %" and within_text(1.0) == "100 %"
    assert within_text(float("nan")) == "—"


MATRIX = """
import torch

class Net(torch.nn.Module):
    def __init__(self, seed, scale, noise=0.0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                                        torch.nn.Linear(32, 8))
        with torch.no_grad():
            if noise:
                generator = torch.Generator().manual_seed(7)
                for p in self.body.parameters():
                    p.add_(noise * p.abs().mean() * torch.randn(p.shape, generator=generator))
            self.body[2].weight.mul_(scale)
            self.body[2].bias.mul_(scale)

    def forward(self, x):
        return self.body(x)

def same():
    return Net(0, {scale}), (torch.rand(4, 16),)

def perturbed():
    return Net(0, {scale}, noise=0.1), (torch.rand(4, 16),)

def different():
    return Net(1, {scale}), (torch.rand(4, 16),)
"""


@pytest.mark.parametrize("scale", [1e-12, 1e-6, 1.0, 1e6])
def test_the_verdict_holds_at_every_output_scale(tmp_path: Path, scale: float) -> None:
    """PyTorch eager against ONNX Runtime (the real exporter, the real runtime, in this
    process): the same model PASSes, perturbed weights and a different model FAIL — at output
    scales from 1e-12 to 1e6, with the default tolerances."""
    import torch

    from deploylens.core.consent import grant_consent
    from deploylens.core.pytorch.source import parse_spec
    from deploylens.core.validate.run import validate_outputs

    source = tmp_path / "nets.py"
    source.write_text(MATRIX.format(scale=repr(scale)))
    grant_consent(source)
    namespace: dict[str, object] = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    module, inputs = namespace["same"]()  # type: ignore[operator]
    model = tmp_path / "same.onnx"
    torch.onnx.export(module, inputs, str(model), dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})  # fmt: skip
    verdicts = {}
    for factory in ("same", "perturbed", "different"):
        spec = parse_spec(f"{source}:{factory}")
        result = validate_outputs(str(model), spec, "", Tolerances())
        verdicts[factory] = (result.passed, result.outputs[0].reason)
    assert verdicts["same"][0], verdicts
    assert not verdicts["perturbed"][0] and not verdicts["different"][0], verdicts
    if scale < 1e-4:  # below atol every element passes: the relative error is what fails them
        assert all("differ" in verdicts[name][1] for name in ("perturbed", "different"))


def _domain_model(path: Path, unused_import: str, contrib: bool) -> Path:
    """Relu (and, with ``contrib``, ONNX Runtime's own com.microsoft Gelu) under a header that
    also imports ``unused_import``, which no node uses: what UltraFace's export looks like."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["r"])]
    nodes.append(
        helper.make_node("Gelu", ["r"], ["y"], domain="com.microsoft")
        if contrib
        else helper.make_node("Identity", ["r"], ["y"])
    )
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    )  # fmt: skip
    imports = [helper.make_opsetid("", 17), helper.make_opsetid(unused_import, 1)]
    if contrib:
        imports.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("contrib", [False, True])
def test_a_domain_the_header_imports_but_no_node_uses_is_not_a_custom_op(
    tmp_path: Path, contrib: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate and the surgery compare run such a model in ONNX Runtime (they called it 'not
    comparable'); ONNX Runtime's own com.microsoft ops need no plugin either."""
    from deploylens.core.surgery.compare import compare_models

    model = _domain_model(tmp_path / "m.onnx", "ai.onnx.contrib.unused", contrib)
    assert main(["validate", str(model)]) == 0, capsys.readouterr()
    compared = compare_models(model, model, [])
    assert compared.comparable and compared.passed, compared


def test_the_export_smoke_test_judges_like_validate(tmp_path) -> None:
    """Export's ONNX Runtime smoke test said "ok" whatever the difference (and a NaN or a shape
    mismatch hid behind max): a model computing x + 1 where PyTorch computed x passed with
    exit 0. It now judges with Validate's compare, and the export verdict fails."""
    import onnx
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    from deploylens.core.export.result import ExportResult
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.export.verify import agreement
    from deploylens.core.pytorch.source import parse_spec

    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [one],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = tmp_path / "plus_one.onnx"
    onnx.save(model, path)
    x = torch.randn(2, 3)
    got = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})
    wrong = agreement(["y"], got, [("", x.numpy())])  # PyTorch's module returned x
    assert not wrong.agrees and wrong.disagreements[0].startswith("y:")
    right = agreement(["y"], got, [("", (x + 1).numpy())])
    assert right.agrees and right.max_abs_diff is not None and right.max_abs_diff < 1e-6
    nan = agreement(["y"], [np.full((2, 3), np.nan, np.float32)], [("", (x + 1).numpy())])
    assert not nan.agrees
    shape = agreement(["y"], [got[0][:1]], [("", (x + 1).numpy())])
    assert not shape.agrees and "shape [1, 3]" in shape.disagreements[0]
    result = ExportResult(source=parse_spec("sample:asinh"), settings=ExportSettings(),
                          cli="", script="", path=str(path), ok=True, actual_opset=17,
                          ort=wrong)  # fmt: skip
    verdict = result.verdict()  # the CLI's exit code and the panel's banner
    assert verdict.failed and "DIFFER" in verdict.word and verdict.exit_code == 1
    result.ort = right
    assert result.verdict().severity == "pass" and result.verdict().exit_code == 0


def test_all_nan_outputs_are_said_as_nan_not_zero(tmp_path: Path, capsys) -> None:
    """A model that computes NaN everywhere (sqrt of a negative) on both runtimes: nothing to
    compare, said as NaN — it was reported "both outputs are all zero" (exit 3)."""
    from onnx import TensorProto, helper

    nan = np.full(64, np.nan, np.float32)
    judged = _judged(nan, nan.copy())
    assert judged.inconclusive and "NaN" in judged.reason and "all zero" not in judged.reason
    mixed = _judged(np.r_[nan[:32], np.zeros(32, np.float32)], np.r_[nan[:32], np.zeros(32)])
    assert mixed.inconclusive and "NaN or inf in 32 of 64 values and all zero" in mixed.reason
    graph = helper.make_graph(
        [
            helper.make_node("Abs", ["x"], ["a"]),
            helper.make_node("Neg", ["a"], ["n"]),
            helper.make_node("Sub", ["n", "one"], ["m"]),
            helper.make_node("Sqrt", ["m"], ["y"]),
        ],
        "nan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = tmp_path / "nan.onnx"
    path.write_bytes(model.SerializeToString())
    code = main(["validate", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3 and report["verdict"]["exit_code"] == 3
    reason = report["outputs"][0]["reason"]
    assert "NaN" in reason and "all zero" not in reason
