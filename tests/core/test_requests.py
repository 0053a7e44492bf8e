"""Every job request round-trips through the command line, JSON (the worker's params) and TOML,
with its defaults in one place; unknown or misspelt keys are errors, on the app side and in the
real worker (calibration silently dropped them before)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from deploylens.core.cli import parser_and_commands
from deploylens.core.errors import UserError
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.settings import ExportSettings
from deploylens.core.graph.request import ShapesRequest, TensorStatsRequest
from deploylens.core.model.request import InspectRequest
from deploylens.core.pytorch.source import InputSpec, parse_spec
from deploylens.core.quantize.request import CalibrateRequest
from deploylens.core.requests import REQUESTS, Request, request_class
from deploylens.core.support.request import CollectRequest, SampleAtenRequest, TensorRTProbeRequest
from deploylens.core.trace.request import ProfileRequest, SweepRequest
from deploylens.core.trt.request import BuildRequest
from deploylens.core.trt.settings import BuildSettings, Calibration, Profile
from deploylens.core.validate.request import ValidateRequest
from deploylens.core.validate.tolerances import Tolerances
from deploylens.core.worker.client import JobFailure


def _validate() -> ValidateRequest:
    return ValidateRequest(
        path="m.onnx",
        torch=parse_spec("torchvision:resnet18"),
        inputs="in.npz",
        preprocess="imagenet",
        tolerances=Tolerances(
            rtol={"": 1e-3, "logits": 1e-2},
            atol={"": 1e-6},
            statistic="max",
            quantile=0.9,
            rel_l2={"": 0.05},
        ),
        seed=3,
        layerwise=True,
        budget_mb=128.0,
    )


def _export() -> ExportRequest:
    source = parse_spec("sample:asinh")
    source.inputs = [InputSpec("x", [1, 3], "float32", -2.0, 2.0)]
    settings = ExportSettings(
        exporter="torchscript",
        opset=13,
        output="out.onnx",
        output_names=["y"],
        dynamic_axes={"x": {0: "batch"}},
        constant_folding=False,
        optimize=False,
        external_data=True,
        plugins=["asinh"],
    )
    return ExportRequest(source, settings)


def _calibrate() -> CalibrateRequest:
    return CalibrateRequest(
        model="m.onnx", data="images", output="q.onnx", method="percentile", percentile=99.9,
        preprocess="imagenet", batch_size=4, batches=8, per_channel=False, exclude=["/head/Gemm"],
        evaluate=50, eval_data="held_out", trt_cache="c.cache", trt_version="8.6.1", threads=2,
    )  # fmt: skip


def _build(tmp_path: Path) -> BuildRequest:
    settings = BuildSettings(
        precisions=["fp16", "int8"],
        workspace_mb=2048,
        profiles=[Profile({"x": ([1, 8], [4, 8], [16, 8])})],
        calibration=Calibration(method="minmax", data="images"),
        plugins=["libx.so"],
        refit=True,
    )
    path = tmp_path / "settings.toml"
    path.write_text(settings.to_toml())
    return BuildRequest("m.onnx", engine="m.plan", settings=settings,
                        settings_file=str(path), version="8.6")  # fmt: skip


def _build_rtx(tmp_path: Path) -> BuildRequest:
    """--target-cc overrides the file's targets and implies --trt-version rtx."""
    path = tmp_path / "rtx.toml"
    path.write_text(BuildSettings(workspace_mb=64, compute_capabilities=["sm89"]).to_toml())
    settings = BuildSettings(workspace_mb=64, compute_capabilities=["sm86", "sm120"])
    return BuildRequest("m.onnx", settings=settings, settings_file=str(path), version="rtx",
                        target_cc=["sm86", "sm120"])  # fmt: skip


def _profile() -> ProfileRequest:
    return ProfileRequest(
        "torchvision:resnet18", "t.json", backend="torch", mode="pipelined", batch=32,
        streams=4, host_buffers="pageable", warmup=2, iterations=7, device="cpu",
    )  # fmt: skip


def _sweep() -> SweepRequest:
    return SweepRequest("torchvision:resnet18", "sweep", batches=[1, 8, 32], streams=[1, 2],
                        modes=["serial", "cudagraph"], host_buffers="pageable", warmup=1,
                        iterations=9, device="cuda")  # fmt: skip


def _with_cli(tmp_path: Path) -> list[Request]:
    return [
        _validate(),
        _export(),
        _calibrate(),
        _build(tmp_path),
        _build_rtx(tmp_path),
        _profile(),
    ]


def _parse(request: Request) -> argparse.Namespace:
    parser, _ = parser_and_commands()
    return parser.parse_args([request.COMMAND, *request.cli_args()])


def test_every_job_has_a_request_class() -> None:
    from deploylens.core.worker.methods import METHODS

    user_jobs = {m for m in METHODS if not m.startswith(("selftest.", "env."))}
    assert user_jobs == set(REQUESTS)
    for job in REQUESTS:
        assert job == request_class(job).JOB


def test_round_trip_through_the_command_line(tmp_path: Path) -> None:
    for request in _with_cli(tmp_path):
        again = type(request).from_args(_parse(request))
        assert again == request, type(request).__name__
        assert request.cli_line().startswith(f"deploylens {request.COMMAND} ")


def test_round_trip_through_json_and_toml(tmp_path: Path) -> None:
    simple: list[Request] = [
        InspectRequest("m.onnx", check=False),
        ShapesRequest("m.onnx"),
        TensorStatsRequest("m.onnx", ["w0", "w1"]),
        CollectRequest(True),
        TensorRTProbeRequest("m.onnx"),
        SampleAtenRequest("asinh"),
    ]
    for request in [*_with_cli(tmp_path), *simple]:
        cls = type(request)
        assert cls.from_params(json.loads(json.dumps(request.to_params()))) == request
        assert cls.from_toml(request.to_toml()) == request, cls.__name__


@pytest.mark.parametrize(
    ("command", "required", "default"),
    [
        ("validate", ["m.onnx"], ValidateRequest("m.onnx")),
        ("calibrate", ["m.onnx", "--data", "d"], CalibrateRequest("m.onnx", "d")),
        ("profile", ["m.onnx", "--out", "t.json"], ProfileRequest("m.onnx", "t.json")),
        ("build", ["m.onnx"], BuildRequest("m.onnx")),
        ("export", ["sample:asinh"], ExportRequest(parse_spec("sample:asinh"))),
    ],
)
def test_the_command_lines_defaults_are_the_requests(
    command: str, required: list[str], default: Request
) -> None:
    parser, _ = parser_and_commands()
    assert type(default).from_args(parser.parse_args([command, *required])) == default


def _params(request: Request) -> dict[str, Any]:
    return json.loads(json.dumps(request.to_params()))


@pytest.mark.parametrize(
    ("request_", "path", "words"),
    [
        (_validate(), ("tolerances", "rtoll"), "unknown setting 'rtoll' (did you mean 'rtol'?)"),
        (_validate(), ("layerwise",), "must be true or false"),
        (_calibrate(), ("methd",), "unknown setting 'methd' (did you mean 'method'?)"),
        (_calibrate(), ("method",), "must be one of minmax, entropy, percentile"),
        (_export(), ("settings", "opset"), "must be an integer"),
        (_profile(), ("backend",), "must be one of ort, torch, trt"),
    ],
)
def test_misspelt_keys_and_wrong_types_are_errors(
    request_: Request, path: tuple[str, ...], words: str
) -> None:
    params = _params(request_)
    target = params
    for key in path[:-1]:
        target = target[key]
    key = path[-1]
    if key in target:
        target[key] = "wrong"
    else:
        target[key] = 1
    with pytest.raises(UserError, match=re.escape(words)):
        type(request_).from_params(params)


def test_the_worker_refuses_a_misspelt_key(samples: Path, tmp_path: Path) -> None:
    """The calibration job used to drop keys it did not know: "methd" calibrated with entropy."""
    from deploylens.core.jobs import run_job

    params = _params(CalibrateRequest(str(samples / "small_cnn.dynamo.onnx"), str(tmp_path)))
    params["methd"] = "minmax"
    with pytest.raises(JobFailure) as caught:
        run_job("quantize.calibrate", params)
    assert caught.value.kind == "user"
    assert "unknown setting 'methd'" in caught.value.message


def test_a_generated_script_runs_and_prints_the_jobs_result(samples: Path, tmp_path: Path) -> None:
    """The "Copy as Python" script of a request runs its job and prints the typed result's
    JSON (it json.dumps-ed the answer, which is no longer a dict)."""
    import subprocess
    import sys

    script = tmp_path / "copied.py"  # (not inspect.py: it would shadow the stdlib module)
    script.write_text(InspectRequest(str(samples / "small_cnn.dynamo.onnx")).python_script())
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["node_count"] > 0


def test_generated_script_names_the_request(tmp_path: Path) -> None:
    script = _calibrate().python_script()
    assert "from deploylens.core.quantize.request import CalibrateRequest" in script
    compile(script, "calibrate.py", "exec")
    assert "torch.onnx.export" in _export().python_script()  # export writes a torch-only one
    assert "import tensorrt" in _build(tmp_path).python_script()


def test_a_shared_part_is_declared_once() -> None:
    """Profile and sweep share how a capture runs; calibrate, sensitivity and the study share
    how the calibration data is read (and how it is scored): each part's fields are declared in
    the part alone — a request that declared one again would have its own default and flag."""
    import dataclasses

    from deploylens.core.request_parts import Part, field_flags

    parts_seen = set()
    for job in REQUESTS:
        cls = request_class(job)
        parts = [b for b in cls.__mro__ if issubclass(b, Part) and not issubclass(b, Request)]
        for part in (base for base in parts if base is not Part):
            parts_seen.add(part.__name__)
            own = {f.field for f in field_flags(part)}
            fields = {f.name for f in dataclasses.fields(part)}  # type: ignore[arg-type]
            assert own == fields, part  # every field has its flag
            assert not own & set(vars(cls).get("__annotations__", {})), (cls, own)
    assert {"CaptureLoop", "CalibrationData", "CalibrationMethod", "Evaluation"} <= parts_seen


def test_each_request_is_generic_in_its_jobs_result_class() -> None:
    """``Request["ModelSummary"]`` and the job table's ``result`` name the same class: the type
    ``run()`` and the GUI's handle promise is the one the worker's answer is decoded into."""
    import typing

    from deploylens.core.job_table import JOBS

    checked = 0
    for job, path in REQUESTS.items():
        cls = request_class(job)
        (base,) = [b for b in cls.__orig_bases__ if typing.get_origin(b) is Request]  # type: ignore[attr-defined]
        (argument,) = typing.get_args(base)
        name = argument.__forward_arg__ if isinstance(argument, typing.ForwardRef) else argument
        assert name == JOBS[job].result.partition(":")[2], (path, name)
        checked += 1
    assert checked == len(REQUESTS) >= 19
