"""Build settings for TensorRT 8.6, 10.x and 11.x: checks, the exact trtexec command per version,
the Polygraphy line, the 11.x migration and TOML. All real (no TensorRT is needed for these)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import onnx
import pytest

from deploylens.core.errors import UserError
from deploylens.core.trt.checks import check
from deploylens.core.trt.commands import (
    migrate_to_11,
    polygraphy_command,
    trtexec_args,
    trtexec_command,
)
from deploylens.core.trt.flags import FLAGS, family, flag_table
from deploylens.core.trt.settings import BuildSettings, Calibration, Profile, load_settings
from tests.helpers.onnx_models import chain_model

INPUTS = {"x": [-1, 8]}
PROFILE = Profile({"x": ([1, 8], [4, 8], [16, 8])})


def ten_style() -> BuildSettings:
    return BuildSettings(
        precisions=["fp16", "int8"],
        workspace_mb=2048,
        optimization_level=4,
        profiles=[PROFILE],
        timing_cache="t.cache",
        calibration=Calibration(method="entropy", data="calib", cache="calib.cache"),
    )


def test_version_families_and_the_flag_table() -> None:
    assert [family(v) for v in ("8.6.1", "9.3", "10.16", "11.4")] == ["8.6", "10", "10", "11"]
    for bad in ("8.5", "7.2", "x"):
        with pytest.raises(ValueError):
            family(bad)
    for gone in ("--fp16", "--int8", "--bf16", "--fp8", "--best", "--calib", "--layerPrecisions",
                 "--layerOutputTypes", "--precisionConstraints"):  # fmt: skip
        assert FLAGS[gone].available("10") and not FLAGS[gone].available("11"), gone
    assert not FLAGS["--stripWeights"].available("8.6") and FLAGS["--stripWeights"].available("11")
    assert len(flag_table()) == len(FLAGS)


def test_exact_trtexec_commands_per_version() -> None:
    settings = ten_style()
    assert check(settings, "10.16", INPUTS) == []
    assert trtexec_command(settings, "10.16", "m.onnx", "m.plan") == (
        "trtexec --onnx=m.onnx --saveEngine=m.plan --minShapes=x:1x8 --optShapes=x:4x8 "
        "--maxShapes=x:16x8 --fp16 --int8 --calib=calib.cache --memPoolSize=workspace:2048M "
        "--builderOptimizationLevel=4 --timingCacheFile=t.cache --profilingVerbosity=detailed "
        "--exportLayerInfo=m.layers.json --exportProfile=m.profile.json "
        "--exportTimes=m.times.json --separateProfileRun"
    )
    with pytest.raises(UserError, match="TensorRT 11 has no precision flags"):
        trtexec_args(settings, "11.4", "m.onnx")
    plain = BuildSettings(profiles=[PROFILE], strip_weights=True, plugins=["libmy.so"])
    assert "--staticPlugins=libmy.so" in trtexec_args(plain, "11.4", "m.onnx")
    assert (
        trtexec_args(BuildSettings(plugins=["libmy.so"]), "8.6", "m.onnx", reports=False)[-1]
        == "--plugins=libmy.so"
    )
    line = polygraphy_command(settings, "m.onnx")
    assert "--trt-min-shapes 'x:[1,8]'" in line and "--pool-limit=workspace:2048M" in line


def test_precise_messages_for_impossible_settings() -> None:
    def messages(settings: BuildSettings, version: str = "10.16") -> list[str]:
        return [p.message for p in check(settings, version, INPUTS)]

    eleven = check(ten_style(), "11.4", INPUTS)
    assert {p.field for p in eleven} == {"precisions", "calibration"}
    assert all("--migrate" in p.fix for p in eleven)
    assert (
        "INT8 needs calibration data"
        in messages(BuildSettings(precisions=["int8"], profiles=[PROFILE]))[0]
    )
    bad_order = Profile({"x": ([4, 8], [2, 8], [16, 8])})
    assert "min ≤ opt ≤ max" in messages(BuildSettings(profiles=[bad_order]))[0]
    fixed = Profile({"x": ([1, 4], [4, 8], [16, 8])})
    assert "axis 1 is fixed at 8" in " ".join(messages(BuildSettings(profiles=[fixed])))
    assert (
        "has rank 2, the profile 3"
        in messages(BuildSettings(profiles=[Profile({"x": ([1, 8, 1],) * 3})]))[0]
    )
    assert "no input 'y'" in messages(BuildSettings(profiles=[Profile({"y": ([1], [1], [1])})]))[0]
    assert "dynamic input 'x' has no shapes" in messages(BuildSettings(profiles=[Profile({})]))[0]
    assert (
        "needs a percentile"
        in messages(
            BuildSettings(
                precisions=["int8"],
                profiles=[PROFILE],
                calibration=Calibration("percentile", data="d"),
            )
        )[0]
    )
    assert (
        "needs TensorRT 9.0"
        in messages(BuildSettings(precisions=["bf16"], profiles=[PROFILE]), "8.6")[0]
    )
    assert "FP16 or INT8" in messages(BuildSettings(dla_core=0, profiles=[PROFILE]))[0]
    assert "0 to 5" in messages(BuildSettings(optimization_level=7, profiles=[PROFILE]))[0]
    assert "not supported" in messages(BuildSettings(), "7.1")[0]


def test_migration_to_11_is_a_diff_and_two_steps() -> None:
    migration = migrate_to_11(ten_style(), "m.onnx")
    assert migration.model == "m.qdq.onnx"
    assert migration.steps[0].startswith("calibrate m.onnx into a Q/DQ model (entropy over calib")
    assert migration.steps[1].startswith(
        "build the strongly typed network: trtexec --onnx=m.qdq.onnx"
    )
    assert {d.field for d in migration.diff} == {"precisions", "calibration"}
    assert check(migration.settings, "11.4", INPUTS) == []
    assert migration.lines()[2] == "Settings diff:"  # the panel's tab and the CLI's text


def test_toml_round_trip_and_bad_files(tmp_path: Path) -> None:
    settings = ten_style()
    path = tmp_path / "s.toml"
    path.write_text(settings.to_toml())
    assert load_settings(path) == settings
    assert "tactic_sources" not in settings.to_toml()  # only what the user changed
    path.write_text("[build]\nfp17 = true\n")
    with pytest.raises(UserError, match="unknown build setting 'fp17'"):
        load_settings(path)
    path.write_text("precisions = [")
    with pytest.raises(UserError, match="not a readable settings file"):
        load_settings(path)


def test_build_cli(tmp_path: Path) -> None:
    from tests.core.test_cli import DEPLOYLENS

    model = tmp_path / "chain.onnx"
    onnx.save(chain_model(), str(model))
    settings = tmp_path / "s.toml"
    settings.write_text(ten_style().to_toml())
    base = [DEPLOYLENS, "build", str(model), "--settings", str(settings)]
    ok = subprocess.run(
        [*base, "--print-trtexec", "--json"], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["trtexec"].startswith(f"trtexec --onnx={model}")
    refused = subprocess.run(
        [*base, "--trt-version", "11.4"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "TensorRT 11 has no precision flags" in refused.stdout


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("workspace_mb = true", "'workspace_mb' must be an integer, not true (a boolean)"),
        ('plugins = "libx.so"', "'plugins' must be a list, not 'libx.so' (a string)"),
        ("optimization_level = true", "'optimization_level' must be an integer"),
        ("precisions = [16]", "'precisions'[0] must be a string, not 16 (an integer)"),
        ("refit = 1", "'refit' must be true or false, not 1 (an integer)"),
        ("workspace_mb = -5", "'workspace_mb' must be 0 or more"),
        ("layer_precisions = { conv = 1 }", "'layer_precisions'.conv must be a string"),
        ("profiles = [{ x = [[1], [2]] }]", "must be [min, opt, max] shapes"),
        ('profiles = [{ x = [[1], [2], ["a"]] }]', "must be an integer, not 'a'"),
        ("calibration = 3", "'calibration' must be a table"),
        ('[calibration]\nmethod = "entropy"\nbatch_size = 1.5', "'calibration'.batch_size"),
        ("workspace = 10", "unknown build setting 'workspace' (did you mean 'workspace_mb'?)"),
    ],
)
def test_wrongly_typed_settings_are_refused_by_key(tmp_path: Path, toml: str, message: str) -> None:
    """They used to make broken command lines: --memPoolSize=workspace:TrueM, one --plugins
    per character, --builderOptimizationLevel=True; four type errors showed Python internals."""
    path = tmp_path / "settings.toml"
    path.write_text(toml + "\n")
    with pytest.raises(UserError) as caught:
        load_settings(path)
    assert message in caught.value.message and "settings.toml" in caught.value.message


def test_every_setting_type_round_trips_through_toml(tmp_path: Path) -> None:
    settings = ten_style()
    settings.plugins = ["liba.so"]
    settings.layer_precisions = {"conv*": "fp32"}
    settings.refit = True
    path = tmp_path / "s.toml"
    path.write_text(settings.to_toml())
    assert load_settings(path) == settings


@pytest.mark.parametrize(
    ("version", "accepted"),
    [("8.6", True), ("8.6.1", True), ("10.16", True), ("9.3", True), ("11.4", True),
     ("12.0", False), ("7.2", False), ("8.5", False), ("ten", False), ("10.x", False)],
)  # fmt: skip
def test_release_range_is_the_same_on_both_ends(version: str, accepted: bool) -> None:
    problems = check(BuildSettings(), version, INPUTS)
    assert (problems == []) is accepted, problems
    if version == "12.0":
        assert "newer than this DeployLens knows" in problems[0].message


def test_every_line_names_the_same_engine_and_the_reports_engine_reads() -> None:
    settings = BuildSettings()
    for engine, expected in (("out/m.plan", "out/m.plan"), ("", "m.engine")):
        trtexec = trtexec_command(settings, "10.16", "m.onnx", engine)
        assert f"--saveEngine={expected}" in trtexec
        assert f"-o {expected}" in polygraphy_command(settings, "m.onnx", engine)
        stem = expected.rsplit(".", 1)[0]
        for flag in ("exportLayerInfo", "exportProfile", "exportTimes"):
            assert f"--{flag}={stem}." in trtexec


# -- TensorRT-RTX: its own release line (no trtexec, strongly typed, ahead-of-time targets) ------
def test_tensorrt_rtx_is_a_family_of_its_own() -> None:
    from deploylens.core.trt.flags import is_rtx

    assert [family(v) for v in ("rtx", "RTX", "rtx-1.7", "rtx-1.7.1.116")] == ["rtx"] * 4
    for bad in ("rtx-2.0", "rtx-", "rtx-1.x", "rtx1.7"):
        with pytest.raises(ValueError):
            family(bad)
    assert is_rtx("rtx-1.7") and not is_rtx("10.16") and not is_rtx("rtx-9")
    assert "TensorRT-RTX release" in check(BuildSettings(), "rtx-2.0")[0].message
    assert not any(FLAGS[name].available("rtx") for name in FLAGS)  # its wheels have no trtexec


def test_what_tensorrt_rtx_lacks_is_a_problem_with_a_fix() -> None:
    settings = BuildSettings(
        precisions=["fp16", "int8"],
        precision_constraints="obey",
        layer_precisions={"/head/*": "fp32"},
        calibration=Calibration(data="calib"),
        timing_cache="t.cache",
        dla_core=0,
        tactic_sources=["+CUDNN", "-JIT_CONVOLUTIONS"],
        compute_capabilities=["sm90", "sm89", "sm89", "sm100"],
    )
    problems = {(p.field, p.message.split(":")[0]) for p in check(settings, "rtx")}
    fields = {field for field, _ in problems}
    assert fields == {
        "precisions", "precision_constraints", "layer_precisions", "calibration", "timing_cache",
        "dla_core", "tactic_sources", "compute_capabilities",
    }  # fmt: skip
    messages = [str(p) for p in check(settings, "rtx")]
    assert any("no Hopper target (sm90" in m for m in messages)
    assert any("'sm100' is not a TensorRT-RTX target" in m for m in messages)
    assert any("named twice" in m for m in messages)
    assert any("deploylens calibrate" in m for m in messages)  # the fix names the Q/DQ route
    assert any("no CUDNN tactics" in m for m in messages)
    assert not any("no JIT_CONVOLUTIONS" in m for m in messages)  # RTX has that one
    current = check(BuildSettings(compute_capabilities=["current", "sm89"]), "rtx")
    assert [p.field for p in current] == ["compute_capabilities"]
    assert check(BuildSettings(compute_capabilities=["sm75", "sm121"]), "rtx-1.7") == []
    # the classic releases build for the GPU they run on: targets are refused there
    classic = check(BuildSettings(compute_capabilities=["sm89"]), "10.16")
    assert [p.field for p in classic] == ["compute_capabilities"] and "hardware_compat" in classic[
        0
    ].fix


def test_tensorrt_rtx_gets_a_script_and_a_polygraphy_line_not_a_trtexec_line() -> None:
    from deploylens.core.trt.script import build_script

    settings = BuildSettings(workspace_mb=512, compute_capabilities=["sm86", "sm120"], refit=True)
    with pytest.raises(UserError, match="ship no trtexec") as info:
        trtexec_command(settings, "rtx", "m.onnx")
    assert "--script" in info.value.hint
    line = polygraphy_command(settings, "m.onnx", "m.plan", "rtx")
    assert line == (
        "POLYGRAPHY_USE_TENSORRT_RTX=1 polygraphy convert m.onnx --convert-to trt -o m.plan "
        "--compute-capabilities 8.6 12.0 --pool-limit=workspace:512M --refittable"
    )
    assert "--use-gpu" in polygraphy_command(BuildSettings(compute_capabilities=["current"]),
                                             "m.onnx", "", "rtx")  # fmt: skip
    source = build_script(settings, "rtx", "m.onnx", "m.plan")
    compile(source, "build.py", "exec")
    assert (
        "import tensorrt_rtx as trt" in source and "config.num_compute_capabilities = 2" in source
    )
    assert "trt.ComputeCapability.SM120, 1" in source and "BuilderFlag.FP16" not in source


def test_compute_capabilities_round_trip_through_toml_and_the_request(tmp_path: Path) -> None:
    from deploylens.core.trt.request import BuildRequest

    settings = BuildSettings(compute_capabilities=["sm89", "sm120"], workspace_mb=64)
    path = tmp_path / "s.toml"
    path.write_text(settings.to_toml())
    assert load_settings(path) == settings
    request = BuildRequest("m.onnx", settings=settings, settings_file=str(path), version="rtx",
                           target_cc=["sm80"])  # fmt: skip
    assert BuildRequest.from_params(json.loads(json.dumps(request.to_params()))) == request
    assert request.cli_args() == ["m.onnx", "--settings", str(path), "--target-cc", "sm80"]
