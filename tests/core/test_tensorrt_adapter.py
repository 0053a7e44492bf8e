"""The TensorRT adapter's contract, per release, against FakeTensorRT — a RECORDING FAKE named as
such (TensorRT cannot be installed here; see tests/helpers/fake_tensorrt.py). These tests prove
the adapter makes the documented API calls with the right arguments for 8.6, 10.x and 11.x; the
``gpu`` test at the end builds for real where TensorRT and a GPU exist."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.consent import grant_consent
from deploylens.core.engine.layers import parse_layer_info
from deploylens.core.errors import UserError
from deploylens.core.trt.job import build_engine
from deploylens.core.trt.script import build_script
from deploylens.core.trt.settings import BuildSettings, Calibration, Profile
from deploylens.core.trt.tensorrt_adapter import BuildCancelled, TensorRTAdapter, load_tensorrt
from deploylens.core.trt.trt_calibrator import make_calibrator
from tests.helpers.fake_tensorrt import RecordingDevice, make_fake_tensorrt


def names(trt, api):
    return [args for call, args in trt.calls if call == api]


def test_tensorrt_86_weakly_typed_int8_with_a_data_calibrator(
    samples: Path, tmp_path: Path
) -> None:
    trt = make_fake_tensorrt("8.6.1")
    data = tmp_path / "calib"
    data.mkdir()
    for i in range(3):
        np.save(data / f"{i}.npy", np.random.default_rng(i).random((3, 32, 32), dtype=np.float32))
    cache = tmp_path / "calib.cache"
    settings = BuildSettings(
        precisions=["fp16", "int8"],
        workspace_mb=256,
        no_tf32=True,
        precision_constraints="obey",
        layer_precisions={"/head/head.2/*": "fp32"},
        calibration=Calibration(method="minmax", data=str(data), cache=str(cache)),
    )
    device = RecordingDevice()
    progress: list[str] = []
    result = build_engine(
        {
            "model": str(samples / "small_cnn.torchscript.onnx"),
            "engine": str(tmp_path / "m.engine"),
            "settings": settings.to_dict(),
        },
        lambda f, m: progress.append(m),
        lambda: False,
        trt=trt,
        device=device,
    )
    assert names(trt, "Builder.create_network") == [
        1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    ]
    assert names(trt, "IBuilderConfig.set_flag") == ["FP16", "INT8", "OBEY_PRECISION_CONSTRAINTS"]
    assert names(trt, "IBuilderConfig.clear_flag") == ["TF32"]
    assert names(trt, "IBuilderConfig.set_memory_pool_limit") == [("WORKSPACE", 256 << 20)]
    # the fake parses the real model: one layer a node, named as TensorRT names them
    assert names(trt, "ILayer.precision") == [("/head/head.2/Gemm", "float32")]
    assert names(trt, "IInt8MinMaxCalibrator.__init__") == [None]
    assert names(trt, "calibrator.get_batch_size") == [1]  # the model's fixed batch axis
    assert len(names(trt, "calibrator.get_batch")) == 3 and device.uploads[0] == (
        "image",
        (1, 3, 32, 32),
    )
    assert cache.read_bytes() == b"TRT-8.6.1-fake\n"  # written through write_calibration_cache
    assert "IProgressMonitor.__init__" not in [c for c, _ in trt.calls]  # 8.6 has no monitor
    assert result.layers == 2 and Path(result.layers_json).is_file()
    assert result.tensorrt == "8.6.1" and (tmp_path / "m.engine").read_bytes().startswith(
        b"FAKEENGINE"
    )
    assert any("parsing" in m for m in progress)


def test_tensorrt_10_strongly_typed_with_plugins_cache_profiles_and_progress(
    tmp_path: Path,
) -> None:
    trt = make_fake_tensorrt("10.16.0")
    plugin = tmp_path / "libmyplugin.so"
    plugin.write_bytes(b"\x7fELF")
    grant_consent(plugin)  # loading a plugin library needs the user's consent (per content)
    timing = tmp_path / "timing.cache"
    settings = BuildSettings(
        strongly_typed=True,
        plugins=[str(plugin)],
        timing_cache=str(timing),
        profiles=[Profile({"x": ([1, 3], [4, 3], [8, 3])})],
        tactic_sources=["-CUDNN", "+JIT_CONVOLUTIONS"],
        optimization_level=5,
        hardware_compatibility="ampere+",
        max_aux_streams=2,
        strip_weights=True,
        refit=True,
        tactic_dram_mb=64,
    )
    reports: list[tuple[float | None, str]] = []
    adapter = TensorRTAdapter(trt, lambda f, m: reports.append((f, m)))
    report = adapter.build("m.onnx", settings, str(tmp_path / "m.engine"))
    assert names(trt, "IPluginRegistry.load_library") == [str(plugin)]
    assert names(trt, "init_libnvinfer_plugins") == [""]
    assert names(trt, "Builder.create_network") == [
        1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    ]
    assert names(trt, "IBuilderConfig.set_flag") == ["REFIT", "STRIP_PLAN"]
    assert names(trt, "IBuilderConfig.add_optimization_profile") == [
        {"x": ((1, 3), (4, 3), (8, 3))}
    ]
    assert names(trt, "IBuilderConfig.set_tactic_sources") == [(0b111 & ~(1 << 2)) | (1 << 4)]
    assert names(trt, "IBuilderConfig.builder_optimization_level") == [5]
    assert names(trt, "IBuilderConfig.hardware_compatibility_level") == [
        trt.HardwareCompatibilityLevel.AMPERE_PLUS
    ]
    assert names(trt, "IBuilderConfig.profiling_verbosity") == [trt.ProfilingVerbosity.DETAILED]
    assert names(trt, "IBuilderConfig.set_memory_pool_limit") == [
        ("TACTIC_SHARED_MEMORY", 64 << 20)
    ]
    assert names(trt, "IBuilderConfig.create_timing_cache") == [b""]  # no cache yet: start empty
    assert timing.read_bytes() == b"fake-timing-cache+"  # saved after the build, atomically
    # progress comes from the outermost phase; the nested one does not move the bar
    assert [f for f, m in reports if m.startswith("Building engine ")] == [0.25, 0.5, 0.75, 1.0]
    assert report.phases == ["Building engine", "Tactic timing"]
    assert ("info", "fake build started") in report.log


def test_cancel_stops_the_build_through_step_complete(tmp_path: Path) -> None:
    trt = make_fake_tensorrt("10.16.0")
    stop = {"now": False}

    def progress(fraction: float | None, text: str) -> None:
        if fraction and fraction >= 0.5:
            stop["now"] = True

    adapter = TensorRTAdapter(trt, progress, lambda: stop["now"])
    with pytest.raises(BuildCancelled):
        adapter.build("m.onnx", BuildSettings(), str(tmp_path / "m.engine"))
    assert names(trt, "build cancelled at step") == [1]
    assert not (tmp_path / "m.engine").exists()


def test_a_progress_callback_that_raises_never_crosses_into_tensorrt(tmp_path: Path) -> None:
    trt = make_fake_tensorrt("10.16.0")

    def progress(fraction: float | None, text: str) -> None:
        if fraction:
            raise RuntimeError("the worker's cancel raises here")

    with pytest.raises(BuildCancelled):
        TensorRTAdapter(trt, progress).build("m.onnx", BuildSettings(), str(tmp_path / "m.engine"))
    assert names(trt, "build cancelled at step") == [0]


def test_tensorrt_11_is_strongly_typed_and_has_no_calibrator(samples: Path, tmp_path: Path) -> None:
    trt = make_fake_tensorrt("11.4.0")
    with pytest.raises(UserError, match="TensorRT 11 has no precision flags"):
        build_engine(
            {
                "model": str(samples / "small_cnn.dynamo.onnx"),
                "engine": str(tmp_path / "e"),
                "settings": {"precisions": ["fp16"]},
            },
            lambda f, m: None,
            lambda: False,
            trt=trt,
        )
    with pytest.raises(UserError, match="removed the calibrators"):
        make_calibrator(trt, "entropy", [], 1, "", RecordingDevice())
    adapter = TensorRTAdapter(trt)
    adapter.build("m.onnx", BuildSettings(no_tf32=True), str(tmp_path / "m.engine"))
    assert names(trt, "Builder.create_network") == [0]
    assert names(trt, "IBuilderConfig.set_flag") == []
    assert names(trt, "IBuilderConfig.clear_flag") == ["TF32"]
    assert "IBuilderConfig.int8_calibrator" not in [c for c, _ in trt.calls]


def test_parser_errors_name_the_node_and_a_failed_build_quotes_the_log(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="node 'fancy_1' \\(FancyOp\\): No importer"):
        TensorRTAdapter(make_fake_tensorrt("10.16.0", parse_ok=False)).build(
            "m.onnx", BuildSettings(), str(tmp_path / "e")
        )
    with pytest.raises(UserError, match="no implementation for layer X"):
        TensorRTAdapter(make_fake_tensorrt("10.16.0", build_ok=False)).build(
            "m.onnx", BuildSettings(), str(tmp_path / "e")
        )
    assert not (tmp_path / "e").exists()


def test_inspect_and_run_with_a_profiler(tmp_path: Path) -> None:
    trt = make_fake_tensorrt("10.16.0")
    adapter = TensorRTAdapter(trt)
    adapter.build("m.onnx", BuildSettings(), str(tmp_path / "m.engine"))
    engine = adapter.deserialize((tmp_path / "m.engine").read_bytes())
    info = parse_layer_info(json.loads(adapter.inspect(engine)), "inspector")
    assert [layer.onnx_nodes for layer in info.layers] == [
        ["/stem/conv/Conv", "/stem/relu/Relu"],
        ["/head/fc/Gemm"],
    ]
    outputs, times = adapter.run(
        engine, {"image": np.zeros((1, 3, 32, 32), np.float32)}, RecordingDevice(), iterations=3
    )
    assert outputs["output"].shape == (1, 10)
    assert names(trt, "IExecutionContext.set_input_shape") == [("image", (1, 3, 32, 32))]
    assert names(trt, "IExecutionContext.execute_async_v3") == [7, 7, 7]
    assert times["/head/fc/Gemm"] == pytest.approx([0.02] * 3)
    with pytest.raises(UserError, match="cannot load this engine"):
        adapter.deserialize(b"garbage")


def test_calibrators_read_and_write_the_cache_and_percentile_needs_one(tmp_path: Path) -> None:
    trt = make_fake_tensorrt("10.16.0")
    cache = tmp_path / "c.cache"
    calibrator = make_calibrator(
        trt, "entropy", [{"image": np.ones((2, 3), np.float32)}], 2, str(cache), RecordingDevice()
    )
    assert names(trt, "IInt8EntropyCalibrator2.__init__") == [None]
    assert calibrator.read_calibration_cache() is None
    assert calibrator.get_batch(["image"]) == [1001] and calibrator.get_batch(["image"]) is None
    calibrator.write_calibration_cache(memoryview(b"TRT-100160-EntropyCalibration2\n"))
    assert calibrator.read_calibration_cache() == b"TRT-100160-EntropyCalibration2\n"
    with pytest.raises(UserError, match="no percentile calibrator"):
        make_calibrator(
            trt, "percentile", [], 1, str(tmp_path / "missing.cache"), RecordingDevice()
        )
    assert make_calibrator(
        trt, "percentile", None, 1, str(cache), RecordingDevice()
    ).read_calibration_cache()


def test_missing_tensorrt_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorrt" else real(name, *a)
    )
    with pytest.raises(
        UserError, match="'tensorrt' is not installed in the worker interpreter"
    ) as info:
        load_tensorrt()
    assert "pip install tensorrt" in info.value.hint


@pytest.mark.parametrize("version", ["8.6.1", "10.16", "11.4"])
def test_build_script_is_valid_python_for_each_release(version: str) -> None:
    settings = BuildSettings(
        workspace_mb=512,
        profiles=[Profile({"x": ([1, 3], [2, 3], [4, 3])})],
        timing_cache="t.cache",
        refit=True,
    )
    if version != "11.4":
        settings.precisions = ["fp16"]
    source = build_script(settings, version, "m.onnx", "m.engine")
    compile(source, "build.py", "exec")
    assert ("EXPLICIT_BATCH" in source) == (version == "8.6.1")
    assert ("BuilderFlag.FP16" in source) == (version != "11.4")
    assert "profile.set_shape)('x', (1, 3), (2, 3), (4, 3))" in source  # or set_shape_input


@pytest.mark.gpu
def test_real_tensorrt_build_inspect_and_run(samples: Path, tmp_path: Path) -> None:
    """Real TensorRT on a real GPU (skipped here: neither exists in CI)."""
    pytest.importorskip("tensorrt")
    result = build_engine(
        {
            "model": str(samples / "small_cnn.dynamo.onnx"),
            "engine": str(tmp_path / "m.engine"),
            "settings": {"workspace_mb": 256},
        },
        lambda f, m: None,
        lambda: False,
    )
    assert result.engine_bytes > 0 and result.layers > 0


def test_tensorrt_capture_writes_layer_times_as_a_trace(tmp_path: Path) -> None:
    """capture_trt through the adapter against the recording fake (no TensorRT here): the
    IProfiler times become a trace the timeline links to ONNX nodes."""
    from deploylens.core.trace.capture import capture_trt
    from deploylens.core.trace.links import node_latency
    from deploylens.core.trace.load import load_trace

    trt = make_fake_tensorrt("10.16.0")
    TensorRTAdapter(trt).build("m.onnx", BuildSettings(), str(tmp_path / "m.engine"))
    result = capture_trt(
        str(tmp_path / "m.engine"), str(tmp_path / "t.json"), iterations=3,
        shapes={"image": (1, 3, 8, 8)}, trt=trt, device=RecordingDevice(),
    )  # fmt: skip
    assert result.backend == "tensorrt" and result.latency_ms_median == pytest.approx(0.03)
    trace = load_trace(tmp_path / "t.json")
    assert len(trace) == 6  # 2 layers × 3 runs
    latency = node_latency(trace)
    assert latency["/head/fc/Gemm"] == pytest.approx(0.02)
    assert latency["/stem/conv/Conv"] == pytest.approx(0.005)  # a fused layer's time is shared
