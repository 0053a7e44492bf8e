"""Export scenarios with the real exporters, ONNX Runtime and the built-in plugins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from deploylens.core.export.fixit import fix_ladder
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.result import ExportResult, OrtSmoke
from deploylens.core.export.settings import ExportSettings, python_script
from deploylens.core.jobs import Worker, run_job
from deploylens.core.plugin_api import load_plugins, plugin_entries
from deploylens.core.pytorch.source import ModelSource, parse_input, parse_spec
from deploylens.core.support.fixes import Fix, FixSettings
from deploylens.core.support.matrix import SupportMatrix


@pytest.fixture(scope="module")
def worker():
    with Worker() as running:
        yield running


@pytest.fixture(scope="module")
def matrix() -> SupportMatrix:
    return SupportMatrix.load(run_job("support.collect").path)


def export(worker: Worker, tmp_path: Path, spec: str, **settings: Any) -> ExportResult:
    """The export job's typed answer (the worker's JSON read back strictly)."""
    source = parse_spec(spec)
    name = f"{source.target}_{settings.get('exporter')}_{settings.get('opset')}.onnx"
    options = ExportSettings(output=str(tmp_path / name), **settings)
    result: ExportResult = worker.run_request(ExportRequest(source, options, plugin_entries()))
    return result


def smoke(result: ExportResult) -> OrtSmoke:
    """ONNX Runtime's smoke test of a written model: it ran."""
    assert result.ort is not None and result.ort.ok, result.ort
    return result.ort


def max_diff(result: ExportResult) -> float:
    found = smoke(result).max_abs_diff
    assert found is not None, "an output had NaN or inf"
    return found


def fixes(result: ExportResult, matrix: SupportMatrix) -> list[Fix]:
    plugins, errors = load_plugins()
    assert not errors
    return fix_ladder(result.findings[0], matrix, plugins)


def test_asinh_torchscript_9_then_plugin(worker, matrix, tmp_path: Path) -> None:
    failed = export(worker, tmp_path, "sample:asinh", exporter="torchscript", opset=9)
    assert not failed.ok
    (finding,) = failed.findings
    assert finding.operator == "aten::asinh" and finding.opset == 9
    assert finding.source.endswith("models.py:25")
    kinds = {(f.kind, f.plugin) for f in fixes(failed, matrix)}
    assert ("exporter", "") in kinds and ("plugin", "asinh") in kinds
    fixed = export(
        worker, tmp_path, "sample:asinh", exporter="torchscript", opset=9, plugins=["asinh"]
    )
    assert fixed.ok and fixed.actual_opset == 9
    assert max_diff(fixed) <= 1e-6


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("opset", [9, 12, 18])
def test_roll_with_dims_exports(worker, tmp_path: Path, exporter: str, opset: int) -> None:
    result = export(worker, tmp_path, "sample:roll_dims", exporter=exporter, opset=opset)
    assert result.ok and max_diff(result) == 0
    if exporter == "dynamo" and opset < 18:
        assert result.actual_opset == 18
        assert "raises requests below 18 to 18" in result.warnings[0]


def test_roll_without_dims_gets_the_composition_fix(worker, matrix, tmp_path: Path) -> None:
    result = export(worker, tmp_path, "sample:roll_flat", exporter="torchscript", opset=12)
    (finding,) = result.findings
    assert finding.operator == "aten::roll" and "len(shifts)" in finding.message
    ladder = fixes(result, matrix)
    assert any(f.kind == "composition" and "torch.cat" in f.code for f in ladder)


def test_deform_conv_fixes(worker, matrix, tmp_path: Path) -> None:
    failed = export(worker, tmp_path, "sample:deform_conv", exporter="torchscript", opset=17)
    (finding,) = failed.findings
    assert finding.operator == "torchvision::deform_conv2d"
    assert "unrecognized namespace" in finding.message
    assert "/torch/" not in finding.source  # never torch/_ops.py, its dispatch, as the cause
    ladder = fixes(failed, matrix)
    assert any(f.settings.exporter == "dynamo" and f.settings.opset == 19 for f in ladder)
    assert sum(f.settings.exporter == "dynamo" for f in ladder) == 1  # one rung for one move
    fix_a = export(worker, tmp_path, "sample:deform_conv", exporter="dynamo", opset=19)
    assert fix_a.ok and max_diff(fix_a) <= 1e-5
    assert "DeformConv" in {n.op_type for n in onnx.load(fix_a.path).graph.node}
    fix_b = export(
        worker,
        tmp_path,
        "sample:deform_conv",
        exporter="torchscript",
        opset=17,
        plugins=["deform_conv2d"],
    )
    assert fix_b.ok and max_diff(fix_b) <= 1e-5
    assert "reference implementations" in smoke(fix_b).via
    assert ("custom", "deform_conv2d") in {
        (n.domain, n.op_type) for n in onnx.load(fix_b.path).graph.node
    }
    invalid = export(worker, tmp_path, "sample:deform_conv", exporter="dynamo", opset=12)
    assert not invalid.ok and invalid.findings[0].kind == "invalid_model"
    assert invalid.path.endswith(".invalid.onnx")  # never saved as a success


def test_autograd_function_symbolic(worker, tmp_path: Path) -> None:
    with_symbolic = export(
        worker,
        tmp_path,
        "sample:custom_fn_symbolic",
        exporter="torchscript",
        opset=17,
        plugins=["customOp2"],
    )
    nodes = onnx.load(with_symbolic.path).graph.node
    assert "customOp2" in {n.op_type for n in nodes}
    assert max_diff(with_symbolic) <= 1e-6
    inlined = export(worker, tmp_path, "sample:custom_fn_plain", exporter="torchscript", opset=17)
    assert inlined.nodes > len(nodes)
    dynamo = export(worker, tmp_path, "sample:custom_fn_symbolic", exporter="dynamo")
    assert any("ignores" in w and "symbolic" in w for w in dynamo.warnings)


@pytest.mark.slow
@pytest.mark.slow_tier
def test_swin_t(worker, matrix, tmp_path: Path, shared_exports: Path) -> None:
    """The heaviest torchvision model: both exporters at opset 14 and 18 (the opset-18 files
    are the ones test_tensorrt_rtx builds: exported once per run)."""
    from tests.helpers.shared_exports import torchvision_export

    for exporter in ("torchscript", "dynamo"):
        for opset in (14, 18):
            result = torchvision_export(shared_exports, "swin_t", exporter, opset)
            assert result["ok"], result.get("findings")
    failed = export(worker, tmp_path, "torchvision:swin_t", exporter="torchscript", opset=9)
    (finding,) = failed.findings
    assert finding.onnx_op == "Pad" and finding.suggested_opset == 11
    assert finding.operator == "aten::pad"
    assert fixes(failed, matrix)[0].settings == FixSettings(opset=11)


def test_reproducers_round_trip(tmp_path: Path) -> None:
    source = parse_spec("sample:asinh")
    settings = ExportSettings(
        exporter="torchscript", opset=9, plugins=["asinh"], output=str(tmp_path / "a.onnx")
    )
    line = ExportRequest(source, settings).cli_line()
    assert line.startswith("deploylens export sample:asinh --exporter torchscript --opset 9")
    assert "--plugin asinh" in line
    source = parse_spec("sample:roll_dims")
    settings = ExportSettings(exporter="torchscript", opset=12, output=str(tmp_path / "r.onnx"))
    script = tmp_path / "reproduce.py"
    script.write_text(python_script(source, settings))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert onnx.load(tmp_path / "r.onnx").opset_import[0].version == 12
    # with a plugin: the script applies it the way the tool does, and the export succeeds
    settings = ExportSettings(
        exporter="torchscript", opset=9, plugins=["asinh"], output=str(tmp_path / "a.onnx")
    )
    script.write_text(python_script(parse_spec("sample:asinh"), settings))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert {n.op_type for n in onnx.load(tmp_path / "a.onnx").graph.node} >= {"Asinh"}


@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")  # making the TorchScript file
def test_sources_refuse_what_would_run_code(tmp_path: Path) -> None:
    import torch

    from deploylens.core.worker.client import JobFailure

    user = tmp_path / "net.py"
    user.write_text("import torch\n\ndef make():\n    return torch.nn.Linear(4, 2)\n")
    source = ModelSource("python", str(user), "make", [parse_input("x:1x4")])
    settings = ExportSettings(output=str(tmp_path / "n.onnx"), exporter="torchscript")
    params = {"source": source.to_dict(), "settings": settings.to_dict()}
    worker = Worker()  # started now: it reads this test's isolated consent store
    worker.start()
    with pytest.raises(JobFailure, match="only with your consent"):
        worker.run("export.run", params)
    from deploylens.core.consent import grant_consent

    grant_consent(user)
    assert worker.run("export.run", params)["ok"]
    checkpoint = tmp_path / "weights.pt"
    torch.save({"w": torch.zeros(2)}, checkpoint)
    with pytest.raises(JobFailure, match="holds a state dict"):
        worker.run(
            "export.run",
            {
                **params,
                "source": ModelSource(
                    "torchscript", str(checkpoint), inputs=[parse_input("x:1x4")]
                ).to_dict(),
            },
        )
    evil = tmp_path / "evil.pt"
    torch.save({"f": print}, evil)  # a pickle that references a callable
    with pytest.raises(JobFailure, match="would run pickled code"):
        worker.run(
            "export.run",
            {
                **params,
                "source": ModelSource(
                    "torchscript", str(evil), inputs=[parse_input("x:1x4")]
                ).to_dict(),
            },
        )
    scripted = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(4, 2)), scripted)
    ok = worker.run(
        "export.run",
        {
            **params,
            "source": ModelSource(
                "torchscript", str(scripted), inputs=[parse_input("x:1x4")]
            ).to_dict(),
        },
    )
    assert ok["ok"]
    worker.close()


def test_exported_program_source(worker, tmp_path: Path) -> None:
    import torch

    path = tmp_path / "linear.pt2"
    module = torch.nn.Linear(4, 2)
    torch.export.save(torch.export.export(module, (torch.randn(1, 4),)), path)
    source = ModelSource("exported_program", str(path), inputs=[parse_input("x:1x4")])
    settings = ExportSettings(output=str(tmp_path / "l.onnx"))
    result = worker.run("export.run", {"source": source.to_dict(), "settings": settings.to_dict()})
    assert result["ok"] and result["ort"]["max_abs_diff"] < 1e-6


def test_cli_export_and_diagnose(tmp_path: Path) -> None:
    from tests.core.test_cli import DEPLOYLENS

    ok = subprocess.run(
        [
            DEPLOYLENS,
            "export",
            "sample:asinh",
            "--exporter",
            "torchscript",
            "--opset",
            "9",
            "--plugin",
            "asinh",
            "--out",
            str(tmp_path / "a.onnx"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr[-1500:]
    assert "wrote 9" in ok.stdout and "agrees with torch, max |Δ| 0" in ok.stdout
    assert ok.stdout.splitlines()[1].startswith("PASS: Exported a.onnx")
    bad = subprocess.run(
        [DEPLOYLENS, "diagnose", "sample:asinh", "--exporter", "torchscript", "--opset", "9"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 1
    assert "✗ aten::asinh" in bad.stdout and "register_custom_op_symbolic" in bad.stdout
    assert "Apply plugin 'asinh'" in bad.stdout
    good = subprocess.run(
        [DEPLOYLENS, "diagnose", "sample:asinh", "--exporter", "dynamo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert good.returncode == 0, good.stderr[-1500:]
    # diagnose works in a scratch folder it deletes: it names no path inside it.
    assert "deploylens-diagnose-" not in good.stdout
    assert "diagnose keeps no file" in good.stdout
    refused = subprocess.run(
        [DEPLOYLENS, "export", "nope.txt"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "is not a model source" in refused.stderr


def test_a_broken_plugin_is_listed_not_fatal() -> None:
    plugins, errors = load_plugins(
        {
            "broken": "deploylens_no_such_plugin_module:PLUGIN",
            "wrong_type": "deploylens.core.export.settings:DYNAMO",
        }
    )
    assert {"asinh", "deform_conv2d", "customOp2"} <= set(plugins)
    assert errors["broken"].startswith("could not be loaded: ModuleNotFoundError")
    assert "not an OpPlugin" in errors["wrong_type"]


DYNAMO_CUSTOM_OP = """
import torch


@torch.library.custom_op("deploylens_test::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


@scale_shift.register_fake
def _(x):
    return torch.empty_like(x)


class Net(torch.nn.Module):
    def forward(self, x):
        return scale_shift(torch.relu(x))


def make():
    return Net()
"""


def test_dynamo_failure_on_an_op_without_translation(tmp_path: Path) -> None:
    from deploylens.core.consent import grant_consent

    user = tmp_path / "net.py"
    user.write_text(DYNAMO_CUSTOM_OP)
    grant_consent(user)
    source = ModelSource("python", str(user), "make", [parse_input("x:2x3")])
    settings = ExportSettings(output=str(tmp_path / "n.onnx"))
    with Worker() as worker:  # started now: it reads this test's consent store
        result = worker.run(
            "export.run", {"source": source.to_dict(), "settings": settings.to_dict()}
        )
    (finding,) = result["findings"]
    assert finding["exporter"] == "dynamo" and finding["kind"] == "unsupported_op"
    assert finding["operator"] == "deploylens_test::scale_shift"
    assert "\x1b[" not in finding["message"]
