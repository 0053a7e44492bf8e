"""INT8 calibration for real: ONNX Runtime static quantization (QDQ) over an image folder, each
method; accuracy against fp32; TensorRT's calibration cache format; the worker job with progress
and cancel."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

from deploylens.core.errors import UserError
from deploylens.core.jobs import Worker
from deploylens.core.quantize import trt_cache
from deploylens.core.quantize.calibrate import calibrate
from deploylens.core.quantize.job import calibrate_and_measure
from deploylens.core.quantize.request import CalibrateRequest, Method
from deploylens.core.worker.client import JobFailure


def image_folder(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        pixels = rng.integers(0, 256, (40, 36, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"img{i:03d}.png")
    return folder


@pytest.mark.parametrize("method", ["minmax", "entropy", "percentile"])
def test_calibration_writes_a_symmetric_int8_qdq_model(
    samples: Path, tmp_path: Path, method: Method
) -> None:
    data = image_folder(tmp_path / "images", 6)
    seen: list[float] = []
    result = calibrate(
        CalibrateRequest(
            str(samples / "small_cnn.dynamo.onnx"),
            str(data),
            str(tmp_path / "q.onnx"),
            method=method,
            preprocess="resize=32x32,scale=1/255",
        ),
        lambda f, m: seen.append(f),
    )
    assert result.batches == 6 and result.samples == 6 and result.quantized_nodes > 5
    assert seen and max(seen) <= 1.0 and seen == sorted(seen)
    model = onnx.load(result.output)
    zero_points = {
        i.name: onnx.numpy_helper.to_array(i)
        for i in model.graph.initializer
        if "zero_point" in i.name
    }
    assert zero_points and all(z.dtype == np.int8 and not z.any() for z in zero_points.values())
    assert "image" in result.ranges and result.ranges["image"][1] <= 1.0 + 1e-6
    session = ort.InferenceSession(result.output, providers=["CPUExecutionProvider"])
    assert session.run(None, {"image": np.zeros((1, 3, 32, 32), np.float32)})[0].shape == (1, 10)


def test_accuracy_and_trt_cache_from_the_same_ranges(samples: Path, tmp_path: Path) -> None:
    data = image_folder(tmp_path / "images", 8)
    report = calibrate_and_measure(
        CalibrateRequest.from_params(
            {
                "model": str(samples / "small_cnn.dynamo.onnx"),
                "data": str(data),
                "method": "entropy",
                "preprocess": "resize=32x32,scale=1/255",
                "output": str(tmp_path / "q.onnx"),
                "evaluate": 30,
                "trt_cache": str(tmp_path / "calib.cache"),
                "trt_version": "8.6.1",
            }
        )
    )
    accuracy = report.accuracy
    # measured on the images (all 8 of them, fewer than the 30 asked), never on random noise
    assert accuracy is not None and accuracy.samples == 8 and 0 < accuracy.max_abs < 0.5
    assert accuracy.data.startswith(f"the first 8 samples of {data}")
    assert accuracy.top1_agreement is not None and accuracy.top1_agreement >= 0.8
    cache = trt_cache.read_cache(tmp_path / "calib.cache")
    assert report.trt_cache is not None
    assert cache.header == "TRT-8601-EntropyCalibration2" == report.trt_cache.header
    assert 0.9 < cache.amax("image") <= 1.0 + 1e-6  # pixels in [0, 1]; entropy may clip a little


def test_cache_format_round_trip_and_errors(tmp_path: Path) -> None:
    # a line as TensorRT writes it: 0x3c008912 is 1/127.5 as big-endian float32
    cache = trt_cache.parse_cache(
        "TRT-7202-EntropyCalibration2\ndata: 3c008912\n"
        "(Unnamed Layer* 4) [Fully Connected]_output: 3d65992f\n"
    )
    assert cache.version == 7202 and cache.algorithm == "EntropyCalibration2"
    assert cache.scales["data"] == pytest.approx(struct.unpack(">f", bytes.fromhex("3c008912"))[0])
    assert (
        "(Unnamed Layer* 4) [Fully Connected]_output" in cache.scales
    )  # names with colons/brackets
    written = trt_cache.from_ranges({"x": (-2.0, 1.0), "y": (0.0, 0.5)}, "10.3.0", "minmax")
    trt_cache.write_cache(written, tmp_path / "c.cache")
    again = trt_cache.read_cache(tmp_path / "c.cache")
    assert again.header == "TRT-100300-MinMaxCalibration"
    assert again.amax("x") == pytest.approx(2.0) and again.amax("y") == pytest.approx(0.5)
    assert trt_cache.mismatch(again, "10.3.0", "minmax") == ""
    assert "will recalibrate" in trt_cache.mismatch(again, "8.6.1", "minmax")
    assert trt_cache.version_number("8.6.1") == 8601 and trt_cache.version_number("10.16") == 101600
    with pytest.raises(UserError, match="does not start with a TensorRT header"):
        trt_cache.parse_cache("hello: 3c008912\n", "bad.cache")
    with pytest.raises(UserError, match="line 2: expected 'tensor: <8 hex digits>'"):
        trt_cache.parse_cache("TRT-8601-EntropyCalibration2\ndata: zz\n", "bad.cache")


def test_bad_requests_are_user_errors(samples: Path, tmp_path: Path) -> None:
    model = str(samples / "small_cnn.dynamo.onnx")
    with pytest.raises(UserError, match="Unknown calibration method"):
        magic: Any = "magic"  # a word the type does not allow: checked at run time too
        calibrate(CalibrateRequest(model, str(tmp_path), method=magic))
    with pytest.raises(UserError, match="no images"):
        calibrate(CalibrateRequest(model, str(tmp_path), method="minmax"))
    data = image_folder(tmp_path / "images", 2)
    with pytest.raises(UserError, match="batch axis is fixed at 1"):
        calibrate(CalibrateRequest(model, str(data), method="minmax", batch_size=4))


def test_calibration_job_in_the_worker_reports_progress_and_cancels(
    samples: Path, tmp_path: Path
) -> None:
    # enough batches that a cancel sent at batch 2 lands before the last one (12 raced it)
    data = image_folder(tmp_path / "images", 60)
    params = {
        "model": str(samples / "small_cnn.dynamo.onnx"),
        "data": str(data),
        "method": "minmax",
        "preprocess": "resize=32x32,scale=1/255",
        "output": str(tmp_path / "q.onnx"),
        "evaluate": 5,
    }
    with Worker() as worker:
        texts: list[str] = []
        result = worker.run("quantize.calibrate", params, on_progress=lambda f, m: texts.append(m))
        assert result["samples"] == 60 and result["accuracy"]["samples"] == 5
        assert any("calibration batch 60/60" in t for t in texts)
        (tmp_path / "q.onnx").unlink()
        with pytest.raises(JobFailure) as info:
            worker.run(
                "quantize.calibrate",
                params,
                on_progress=lambda f, m: worker.cancel() if "batch 2/" in m else None,
            )
        assert info.value.kind == "cancelled"
    assert not (tmp_path / "q.onnx").exists()
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]
