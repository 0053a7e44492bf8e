"""Real TensorRT in CI: NVIDIA's TensorRT-RTX (``tensorrt_rtx``, installed by ``.[trt]``) parses
and builds engines ahead of time on these GPU-less machines, so the adapter's calls are accepted
— or refused — by the real library here, not only by the recording fake.

Fake ≡ real: each scenario runs twice through the same recording proxy, once against the real
module and once against ``make_fake_tensorrt("rtx-1.7.1.116")`` (the RECORDING FAKE, the stand-in
for the 8.6/10/11 releases that cannot be installed), and the calls made and the outcome must be
equal. What only one side can answer is left out and said so: the plan's bytes, the builder's
log lines and its progress phases (the real builder reports its own phases; the fake a fixed
pair).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from deploylens.core.errors import UserError
from deploylens.core.trt.findings import ParseRejected
from deploylens.core.trt.job import build_engine
from deploylens.core.trt.settings import BuildSettings, Profile
from deploylens.core.trt.tensorrt_adapter import BuildCancelled, TensorRTAdapter
from tests.core.test_cli import DEPLOYLENS
from tests.helpers.fake_tensorrt import make_fake_tensorrt
from tests.helpers.onnx_models import custom_op_between_relus, dynamic_conv_model, layer_norm_model
from tests.helpers.trt_recorder import RecordedModule

FAKE_RTX = "rtx-1.7.1.116"


@dataclass
class Scenario:
    model: Callable[[Path, Path], Path]  # (samples, tmp) → model path
    settings: BuildSettings = field(default_factory=BuildSettings)
    cancel: bool = False


def _sample(name: str) -> Callable[[Path, Path], Path]:
    return lambda samples, tmp: samples / name


def _made(make: Callable[[], onnx.ModelProto], name: str) -> Callable[[Path, Path], Path]:
    def write(samples: Path, tmp: Path) -> Path:
        onnx.save(make(), tmp / name)
        return tmp / name

    return write


SCENARIOS = {
    "two targets and the config knobs": Scenario(
        _sample("small_cnn.dynamo.onnx"),
        BuildSettings(
            workspace_mb=256,
            optimization_level=3,
            max_aux_streams=2,
            tactic_sources=["-JIT_CONVOLUTIONS"],
            compute_capabilities=["sm89", "sm120"],
        ),
    ),
    "TensorRT-RTX's default targets": Scenario(_sample("small_cnn.torchscript.onnx")),
    "a profile for a dynamic batch": Scenario(
        _made(dynamic_conv_model, "dynamic.onnx"),
        BuildSettings(
            profiles=[Profile({"x": ([1, 3, 16, 16], [4, 3, 16, 16], [8, 3, 16, 16])})],
            compute_capabilities=["sm86"],
        ),
    ),
    "'current' needs a GPU driver": Scenario(
        _sample("small_cnn.dynamo.onnx"), BuildSettings(compute_capabilities=["current"])
    ),
    "a custom op the parser rejects": Scenario(_made(custom_op_between_relus, "custom.onnx")),
    "cancel stops the builder": Scenario(_sample("small_cnn.dynamo.onnx"), cancel=True),
}


def run_scenario(trt: Any, scenario: Scenario, samples: Path, tmp: Path) -> tuple[list, tuple]:
    """(calls the adapter made, outcome) with everything path- and run-specific normalised."""
    recorded = RecordedModule(trt)
    adapter = TensorRTAdapter(recorded, cancelled=lambda: scenario.cancel)
    model = scenario.model(samples, tmp)
    try:
        report = adapter.build(str(model), scenario.settings, str(tmp / "m.engine"))
        outcome: tuple = ("built", report.bindings, report.engine_bytes > 0, bool(report.phases))
    except ParseRejected as rejected:
        outcome = (
            "rejected",
            [(f.node_name, f.op, f.code, f.plugin_searched, f.node) for f in rejected.findings],
        )
    except BuildCancelled:
        outcome = ("cancelled",)
    except UserError as error:
        outcome = ("refused", "cudaError 35" in error.message, error.hint)
    return recorded.recorder.calls, outcome


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_fake_makes_the_same_calls_and_outcome_as_real_tensorrt_rtx(
    name: str, rtx: Any, samples: Path, tmp_path: Path
) -> None:
    scenario = SCENARIOS[name]
    (tmp_path / "real").mkdir()
    (tmp_path / "fake").mkdir()
    real_calls, real_outcome = run_scenario(rtx, scenario, samples, tmp_path / "real")
    fake_calls, fake_outcome = run_scenario(
        make_fake_tensorrt(FAKE_RTX), scenario, samples, tmp_path / "fake"
    )
    assert fake_calls == real_calls
    assert fake_outcome == real_outcome
    assert real_calls, "the scenario made no TensorRT call"


def test_the_scenarios_cover_every_outcome(rtx: Any, samples: Path, tmp_path: Path) -> None:
    """A suite that compared only successes would let a fake that never fails pass."""
    kinds = set()
    for number, scenario in enumerate(SCENARIOS.values()):
        folder = tmp_path / str(number)
        folder.mkdir()
        kinds.add(run_scenario(rtx, scenario, samples, folder)[1][0])
    assert kinds == {"built", "rejected", "cancelled", "refused"}


# -- the seeds' cases through the real parser and builder ----------------------------------------
def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DEPLOYLENS, *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


def build_json(model: Path, engine: Path, *extra: str) -> dict[str, Any]:
    result = cli("build", str(model), "--engine", str(engine), "--build", "--json", *extra)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return json.loads(result.stdout)


def test_cli_builds_a_real_plan_ahead_of_time_on_a_cpu_only_machine(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    engine = tmp_path / "cnn.engine"
    report = build_json(samples / "small_cnn.dynamo.onnx", engine, "--target-cc", "sm89,sm120")
    assert report["built"] and report["product"] == "TensorRT-RTX"
    assert report["targets"] == ["sm89", "sm120"] and report["targets_named"]
    assert engine.stat().st_size == report["engine_bytes"] > 100_000
    assert report["seconds"] > 0 and any(
        "Engine generation completed" in line for line in report["log"]
    )
    # no GPU to load it for the inspector: the builder's own layer account, marked as such
    layers = json.loads(Path(report["layers_json"]).read_text())
    assert layers["Source"].startswith("TensorRT builder log") and report["layers"] >= 1
    fused = "".join(layer.get("Metadata", "") for layer in layers["Layers"])
    assert "[ONNX Layer: node_Conv_27]" in fused and "[ONNX Layer: node_linear]" in fused
    assert layers["Bindings"] == ["image", "output"]
    text = cli("build", str(samples / "small_cnn.dynamo.onnx"), "--engine", str(engine),
               "--build", "--target-cc", "sm89")  # fmt: skip
    assert text.returncode == 0 and "ahead of time for sm89" in text.stdout


def test_asinh_at_opset_9_with_the_plugin_parses_and_builds(rtx: Any, tmp_path: Path) -> None:
    model = tmp_path / "asinh9.onnx"
    export = cli("export", "sample:asinh", "--exporter", "torchscript", "--opset", "9",
                 "--plugin", "asinh", "--out", str(model))  # fmt: skip
    assert export.returncode == 0, export.stderr[-1500:]
    report = build_json(model, tmp_path / "asinh9.engine", "--target-cc", "sm89")
    assert report["built"] and report["engine_bytes"] > 0


def test_the_probe_job_names_blocked_nodes_from_its_own_guarded_parse(
    rtx: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's probe parses the model once: the guard's parse (before TensorRT reads the
    file) names the nodes TensorRT reports by index. A second ``onnx.load`` after the parse was
    a third of vit_b_16's probe. Its answer is the one a probe that reads the file again
    gives."""
    from deploylens.core.support.request import TensorRTProbeRequest
    from deploylens.core.trt.probe import probe_model, tensorrt_probe_job

    path = tmp_path / "custom.onnx"
    onnx.save(custom_op_between_relus(), path)
    again = probe_model(str(path), rtx, module="tensorrt_rtx")

    class Context:  # what the job uses of the worker's JobContext
        def __init__(self) -> None:
            self.kept: list[Any] = []

        def progress(self, *args: Any, **kwargs: Any) -> None:
            pass

        def keep(self, value: Any) -> None:
            self.kept.append(value)

    def second_parse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the probe parsed the model a second time")

    context = Context()
    monkeypatch.setattr(onnx, "load", second_parse)
    params = TensorRTProbeRequest(str(path), "tensorrt_rtx").to_params()
    once = tensorrt_probe_job(context, params)
    assert once.unsupported_nodes == ["f1"] and not once.supported
    assert once == again
    context.kept.clear()  # the parsers first, then their builder (JobContext's order)


def test_plugin_nodes_name_the_library_and_the_reference(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    from deploylens.core.trt.probe import probe_model

    custom_op2 = probe_model(str(samples / "custom_fn_symbolic.torchscript.onnx"), rtx)
    (finding,) = custom_op2.findings
    assert (finding.node_name, finding.op) == ("/customOp2", "customOp2")
    assert finding.plugin_searched[-1]["namespace"] == "custom_domain"
    assert "'customOp2' has an ONNX Runtime reference" in finding.fix
    assert "names no TensorRT plugin library" in finding.fix

    deform = probe_model(str(samples / "deform_conv.dynamo19.onnx"), rtx)
    (finding,) = deform.findings
    assert (finding.op, finding.code) == ("DeformConv", "UNSUPPORTED_NODE")
    assert "registered as DeformConv version 1" in finding.fix

    model = tmp_path / "deform_plugin.onnx"
    export = cli("export", "sample:deform_conv", "--exporter", "torchscript", "--plugin",
                 "deform_conv2d", "--out", str(model))  # fmt: skip
    assert export.returncode == 0, export.stderr[-1500:]
    report = build_json(model, tmp_path / "d.engine", "--target-cc", "sm89")
    assert not report["built"]
    (finding,) = report["findings"]  # the CLI's JSON
    assert finding["op"] == "deform_conv2d"
    assert finding["plugin_searched"][-1]["namespace"] == "custom"
    assert "load libdeform_conv2d.so" in finding["fix"]
    assert "ONNX Runtime reference implementation" in finding["fix"]
    assert "registers 'DeformConv2d', not 'deform_conv2d'" in finding["fix"]
    text = cli("build", str(model), "--engine", str(tmp_path / "d.engine"), "--build",
               "--target-cc", "sm89")  # fmt: skip
    assert text.returncode == 1 and "fix: the parser looked for" in text.stdout


def _plugin_node_model(path: Path, op: str, **attributes: Any) -> str:
    """One node of ``op`` in the trt.plugins domain, shaped as ROIAlign's (features, rois,
    batch indices)."""
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x", "rois", "idx"], ["y"], domain="trt.plugins", **attributes)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("idx", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 2, 2])],
    )  # fmt: skip
    opsets = [onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid("trt.plugins", 1)]
    onnx.save(onnx.helper.make_model(graph, opset_imports=opsets, ir_version=10), path)
    return str(path)


def test_a_plugin_fix_names_what_the_installed_registry_holds(rtx: Any, tmp_path: Path) -> None:
    """TensorRT-RTX's registry, asked live, holds ROIAlign_TRT version 2 and none of the classic
    plugin library's other names: a node asking for EfficientNMS_TRT (classic ships it) is told
    so, and one asking for ROIAlign_TRT version 1 (classic's) is told to ask for version 2 —
    which gets it past "plugin not found" in a real parse."""
    from deploylens.core.trt.plugin_registry import registered_plugins
    from deploylens.core.trt.probe import probe_model

    registered = registered_plugins(rtx)
    assert registered is not None and ("ROIAlign_TRT", "2") in {
        (p.name, p.version) for p in registered
    }
    nms = probe_model(_plugin_node_model(tmp_path / "nms.onnx", "EfficientNMS_TRT"), rtx)
    (finding,) = nms.findings
    assert finding.plugin_not_found
    assert "TensorRT-RTX's own plugin registry (asked live) holds only: ROIAlign_TRT v2" in (
        finding.fix
    )
    old = probe_model(_plugin_node_model(tmp_path / "r1.onnx", "ROIAlign_TRT", plugin_version="1"),
                      rtx)  # fmt: skip
    (finding,) = old.findings
    assert 'set the node\'s plugin_version attribute to "2"' in finding.fix
    fixed = probe_model(
        _plugin_node_model(tmp_path / "r2.onnx", "ROIAlign_TRT", plugin_version="2"), rtx
    )
    assert not any(f.plugin_not_found for f in fixed.findings)  # the registry's creator found


def test_layer_normalization_at_opset_17_builds(rtx: Any, tmp_path: Path) -> None:
    onnx.save(layer_norm_model(17), tmp_path / "ln.onnx")
    report = build_json(tmp_path / "ln.onnx", tmp_path / "ln.engine", "--target-cc", "sm89")
    assert report["built"] and report["engine_bytes"] > 0


def test_the_int8_qdq_model_from_calibrate_builds_strongly_typed(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    """The TensorRT 11 migration path, made real: calibrate on the CPU into Q/DQ, then build it
    as it is (TensorRT-RTX has no INT8 flag: the types come from the model)."""
    data = tmp_path / "calib"
    data.mkdir()
    rng = np.random.default_rng(0)
    for i in range(8):
        np.save(data / f"{i}.npy", rng.random((3, 32, 32), dtype=np.float32))
    qdq = tmp_path / "q.onnx"
    calibrate = cli("calibrate", str(samples / "small_cnn.dynamo.onnx"), "--data", str(data),
                    "--method", "minmax", "--out", str(qdq))  # fmt: skip
    assert calibrate.returncode == 0, calibrate.stderr[-1500:]
    ops = {node.op_type for node in onnx.load(qdq).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    fp32 = build_json(
        samples / "small_cnn.dynamo.onnx", tmp_path / "f.engine", "--target-cc", "sm89"
    )
    int8 = build_json(qdq, tmp_path / "q.engine", "--target-cc", "sm89")
    assert int8["built"] and fp32["built"] and int8["engine_bytes"] != fp32["engine_bytes"]
    # the builder compiled the Q/DQ nodes into the plan (its own account of the fused region)
    fused = "".join(
        layer.get("Metadata", "")
        for layer in json.loads(Path(int8["layers_json"]).read_text())["Layers"]
    )
    assert "QuantizeLinear" in fused and "DequantizeLinear" in fused


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize(
    "name",
    ["resnet50", "mobilenet_v3_small", pytest.param("swin_t", marks=pytest.mark.slow_tier)],
)
def test_torchvision_exports_parse_and_build_for_sm89(
    rtx: Any, name: str, exporter: str, tmp_path: Path, shared_exports: Path
) -> None:
    """Exported at opset 18 (swin_t's files are test_export's: made once per run)."""
    from tests.helpers.shared_exports import torchvision_export

    export = torchvision_export(shared_exports, name, exporter, 18)
    assert export["ok"], export.get("findings")
    model = Path(export["path"])
    adapter = TensorRTAdapter(rtx)
    report = adapter.build(str(model), BuildSettings(compute_capabilities=["sm89"]),
                           str(tmp_path / "e.engine"))  # fmt: skip
    assert report.engine_bytes > 1_000_000


def test_the_polygraphy_line_and_the_script_build_the_same_plan(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    """The reproducers DeployLens prints for TensorRT-RTX run as printed, here."""
    model = samples / "small_cnn.dynamo.onnx"
    settings = tmp_path / "s.toml"
    settings.write_text('workspace_mb = 256\ncompute_capabilities = ["sm89", "sm120"]\n')
    lines = cli("build", str(model), "--trt-version", "rtx", "--settings", str(settings),
                "--engine", str(tmp_path / "pg.engine"), "--polygraphy")  # fmt: skip
    assert lines.returncode == 0, lines.stderr
    line = lines.stdout.strip().splitlines()[-1]
    assert line.startswith("POLYGRAPHY_USE_TENSORRT_RTX=1 polygraphy convert")
    assert "--compute-capabilities 8.9 12.0" in line
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # the venv's polygraphy
    polygraphy = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PATH": path})  # fmt: skip
    assert polygraphy.returncode == 0, polygraphy.stderr[-1500:]
    assert (tmp_path / "pg.engine").stat().st_size > 100_000
    script = tmp_path / "build.py"
    written = cli("build", str(model), "--trt-version", "rtx", "--settings", str(settings),
                  "--engine", str(tmp_path / "py.engine"), "--script", str(script))  # fmt: skip
    assert written.returncode == 0, written.stderr
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert (tmp_path / "py.engine").stat().st_size > 100_000


def test_support_target_trt_rtx_answers_from_the_real_parser(rtx: Any, samples: Path) -> None:
    ok = cli("support", str(samples / "small_cnn.dynamo.onnx"), "--target", "trt-rtx")
    assert ok.returncode == 0 and "TensorRT-RTX" in ok.stdout and ": OK" in ok.stdout
    blocked = cli("support", str(samples / "custom_fn_symbolic.torchscript.onnx"), "--json")
    assert blocked.returncode == 1
    live = json.loads(blocked.stdout)["tensorrt_rtx"]  # the default targets: the live parser wins
    assert live["unsupported_nodes"] == ["/customOp2"]


def test_refit_without_a_gpu_says_why_it_fails(rtx: Any, samples: Path, tmp_path: Path) -> None:
    """Measured here: TensorRT-RTX 1.7's kernel compiler fails refittable ahead-of-time builds
    on a machine with no GPU, for every target; the user gets the reason, not Myelin's."""
    with pytest.raises(UserError) as info:
        TensorRTAdapter(rtx).build(str(samples / "small_cnn.dynamo.onnx"),
                                   BuildSettings(refit=True, compute_capabilities=["sm89"]),
                                   str(tmp_path / "r.engine"))  # fmt: skip
    assert "refittable or weight-stripped plans only where a GPU" in info.value.hint
    assert not (tmp_path / "r.engine").exists()


def test_a_real_build_job_through_the_worker_reports_what_it_built(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    result = build_engine(
        {"model": str(samples / "small_cnn.torchscript.onnx"), "engine": str(tmp_path / "e"),
         "version": "rtx", "settings": {"compute_capabilities": ["sm80"]}},
        lambda f, m: None, lambda: False,
    )  # fmt: skip
    assert result.built and result.targets == ["sm80"]
    assert any("could not inspect the engine" in line for line in result.log)


def test_the_table_vs_live_parser_crosscheck_accounts_for_every_model(
    rtx: Any, artifacts: Path
) -> None:
    """bench/trt_crosscheck.py on a slice of the onnx backend node tests: every model either
    agrees or lands in exactly one disagreement class (the full run's figures are in the note)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import trt_crosscheck

    result = trt_crosscheck.crosscheck(limit=120)
    counted = sum(sum(side.values()) for side in result["classes"].values())
    assert result["models"] == 120 and result["agree"] + counted == 120
    assert result["agree"] > 40


@pytest.mark.gpu
def test_on_an_rtx_class_gpu_the_plan_loads_inspects_runs_and_matches_onnx_runtime(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    """The run half, which needs an RTX-class GPU (compute capability 7.5–12.x except Hopper):
    skipped without one — it has never run in CI, and says so in its skip reason."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    if f"sm{major}{minor}" not in ("sm75", "sm80", "sm86", "sm89", "sm120", "sm121"):
        pytest.skip(
            f"sm{major}{minor} ({torch.cuda.get_device_name()}) is not a TensorRT-RTX target"
        )
    import onnxruntime as ort

    from deploylens.core.engine.layers import parse_layer_info
    from deploylens.core.trt.device import TorchDevice

    model = samples / "small_cnn.dynamo.onnx"
    adapter = TensorRTAdapter(rtx)
    adapter.build(str(model), BuildSettings(compute_capabilities=["current"]),
                  str(tmp_path / "m.engine"))  # fmt: skip
    engine = adapter.deserialize((tmp_path / "m.engine").read_bytes())
    info = parse_layer_info(json.loads(adapter.inspect(engine)), "inspector")
    assert info.layers
    feeds = {"image": np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)}
    outputs, times = adapter.run(engine, feeds, TorchDevice(), iterations=5)
    assert times and all(len(v) == 5 for v in times.values())
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)[0]
    np.testing.assert_allclose(outputs["output"], expected, rtol=1e-3, atol=1e-4)


def _embedding_model(folder: Path, dims: list[Any]) -> Path:
    """input_ids [dims] → Gather from a 100x16 table → ReduceMean: a text model's front, its
    dims symbolic where given as names."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.random.default_rng(0).random((100, 16), np.float32), "t")
    nodes = [helper.make_node("Gather", ["t", "ids"], ["e"]),
             helper.make_node("ReduceMean", ["e"], ["y"], axes=[-1], keepdims=0)]  # fmt: skip
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [table])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = folder / f"emb_{'_'.join(map(str, dims))}.onnx"
    onnx.save(model, path)
    return path


def test_dynamic_inputs_without_a_profile_never_build_a_silent_one_token_engine(
    rtx: Any, tmp_path: Path
) -> None:
    """A sequence dimension with no profile is refused with the flag that gives its range (it
    built a [1, 1] engine with the warning only in --json); a dynamic batch alone builds for 1
    and the text report says so; --profile builds the range asked."""
    text = _embedding_model(tmp_path, ["batch", "sequence"])
    refused = cli("build", str(text), "--build", "--target-cc", "sm89",
                  "--engine", str(tmp_path / "t.plan"))  # fmt: skip
    assert refused.returncode == 1 and "dynamic dimensions beyond the batch" in refused.stderr
    assert "--profile 'ids:1x1/1x8/1x64'" in refused.stderr and not (tmp_path / "t.plan").exists()
    given = cli("build", str(text), "--build", "--target-cc", "sm89", "--profile",
                "ids:1x8/2x128/4x512", "--engine", str(tmp_path / "t.plan"))  # fmt: skip
    assert given.returncode == 0 and "notice" not in given.stdout, given.stderr[-2000:]
    batch = _embedding_model(tmp_path, ["batch", 32])
    built = cli("build", str(batch), "--build", "--target-cc", "sm89",
                "--engine", str(tmp_path / "b.plan"))  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    assert (
        "notice: no optimization profile: the dynamic batch of ids is built for 1" in built.stdout
    )


def test_without_classic_tensorrt_the_build_names_the_tensorrt_rtx_route(
    rtx: Any, samples: Path, tmp_path: Path
) -> None:
    """--build without --target-cc asked for classic TensorRT, which is not installed here:
    the sentence names TensorRT-RTX's ahead-of-time build instead of only 'tensorrt is
    missing'; a TensorRT-RTX plan given to profile says it needs an RTX GPU and its driver."""
    import importlib.util

    if importlib.util.find_spec("tensorrt") is not None:
        pytest.skip("classic TensorRT is installed here: the build runs")
    model = samples / "small_cnn.dynamo.onnx"
    run = cli("build", str(model), "--build", "--engine", str(tmp_path / "m.engine"))
    assert run.returncode == 1 and "TensorRT-RTX is" in run.stderr and "--target-cc" in run.stderr
    plan = tmp_path / "m.plan"
    assert cli("build", str(model), "--build", "--target-cc", "sm89", "--engine",
               str(plan)).returncode == 0  # fmt: skip
    profile = cli("profile", str(plan), "--backend", "trt", "--out", str(tmp_path / "t.json"))
    assert profile.returncode == 1 and "RTX-class GPU and its driver" in profile.stderr
    assert "cannot be built nor parsed" not in profile.stderr


def test_deform_to_trt_on_another_exporters_node_is_a_sentence(tmp_path: Path) -> None:
    """A two-input deform_conv2d (not DeployLens's five-input export) was a raw ValueError."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("deform_conv2d", ["x", "offset"], ["y"], "dcn", domain="custom")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    offset = helper.make_tensor_value_info("offset", TensorProto.FLOAT, [1, 18, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", [x, offset], [y])
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)]
    model = helper.make_model(graph, opset_imports=imports, ir_version=8)
    path = tmp_path / "dcn.onnx"
    onnx.save(model, path)
    run = cli("surgery", str(path), "--pattern", "deform_to_trt", "--out", str(tmp_path / "e.onnx"))
    assert run.returncode == 1 and "is not DeployLens's deform_conv2d export" in run.stderr
    assert "ValueError" not in run.stderr and "Traceback" not in run.stderr
