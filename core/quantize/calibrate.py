"""INT8 calibration that really runs on the CPU: ONNX Runtime static quantization (QDQ format)
over a calibration folder, with MinMax, Entropy or Percentile ranges.

The Q/DQ model is what TensorRT 11 builds (strongly typed, explicit quantization); the same ranges
become a TensorRT ≤10 calibration cache (``trt_cache``). Quantization is symmetric INT8 for
activations and weights, per-channel weights — what TensorRT accepts from Q/DQ nodes.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import staged_outputs
from deploylens.core.model.staging import commit_staged
from deploylens.core.quantize.request import METHODS, CalibrateRequest, default_output

# Entropy: 512 histogram bins searched for the 128-level threshold with the least KL divergence.
# TensorRT uses 2048 bins, but ORT's search is Python and O(bins²): on resnet18 (50 tensors) 2048
# bins took 32 s, 512 take 7 s; ORT's own default (128 bins) can never clip, i.e. equals MinMax.
CALIBRATOR_OPTIONS: dict[str, dict[str, Any]] = {
    "minmax": {"symmetric": True},
    "entropy": {"symmetric": True, "num_bins": 512, "num_quantized_bins": 128},
    "percentile": {"symmetric": True, "num_bins": 2048},
}
Progress = Callable[[float, str], None]


@dataclass
class CalibrationResult:
    output: str
    method: str
    batches: int
    samples: int
    seconds: float
    ranges: dict[str, tuple[float, float]]
    quantized_nodes: int

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds else 0.0


class FolderReader:
    """ONNX Runtime's ``CalibrationDataReader`` over ``core.data`` batches, reporting progress.

    ``progress`` may raise (the worker's cancel does) — that stops the calibration where it is.
    """

    def __init__(self, request: CalibrateRequest, inputs: list[Any], progress: Progress) -> None:
        from deploylens.core.data.preprocess import (
            batch_size,
            batches,
            parse_preprocess,
            sample_count,
        )

        self._inputs = [(i.name, list(i.shape)) for i in inputs]
        self._dtypes = {i.name: _numpy_dtype(i.type) for i in inputs}
        self.batch_size = batch_size(self._inputs[0][1], request.batch_size)
        files = sample_count(request.data, self._inputs)
        # Whole batches only (when there is at least one): ONNX Runtime's histogram calibrators
        # (entropy, percentile) stack the batches and fail on a shorter last one — 200 images
        # at batch 32 raised "inhomogeneous shape". The samples left out are counted as such.
        available = max(1, files // self.batch_size)
        self.left_out = files - available * self.batch_size if files >= self.batch_size else 0
        self.total = min(available, request.batches) if request.batches else available
        spec = parse_preprocess(request.preprocess) if request.preprocess else None
        self._iter: Iterator[dict[str, np.ndarray]] = batches(
            request.data, self._inputs, self.batch_size, spec, limit=self.total
        )
        self._progress = progress
        self.produced = 0
        self.samples = 0
        self.peak = 0.0  # the largest finite |value| of the floating inputs given
        self.not_finite = 0  # their NaN and inf values

    def get_next(self) -> dict[str, np.ndarray] | None:
        batch = next(self._iter, None)
        if batch is None:
            return None
        self.produced += 1
        self.samples += len(next(iter(batch.values())))
        self._progress(
            self.produced / self.total, f"calibration batch {self.produced}/{self.total}"
        )
        cast = {k: v.astype(self._dtypes[k], copy=False) for k, v in batch.items()}
        for value in cast.values():
            if np.issubdtype(value.dtype, np.floating) and value.size:
                finite = np.isfinite(value)
                self.not_finite += int(value.size - np.count_nonzero(finite))
                if finite.any():
                    self.peak = max(self.peak, float(np.abs(value[finite]).max()))
        return cast

    # CalibrationDataReader protocol (ORT checks for get_next; iteration is a convenience)
    def __iter__(self) -> FolderReader:
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        batch = self.get_next()
        if batch is None:
            raise StopIteration
        return batch


def _numpy_dtype(ort_type: str) -> Any:
    from deploylens.core.data.feeds import ORT_DTYPES

    return ORT_DTYPES.get(ort_type, np.float32)


METHOD_ENUM = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
QDQ_OPTIONS = {
    "ActivationSymmetric": True,  # TensorRT's INT8 is symmetric: zero points must be 0
    "WeightSymmetric": True,
    "QuantizeBias": False,  # TensorRT fuses float biases; int32 bias Q/DQ is not its format
}


def check_method(request: CalibrateRequest) -> None:
    if request.method not in METHODS:
        raise UserError(f"Unknown calibration method '{request.method}'; use {', '.join(METHODS)}.")
    if request.method == "percentile" and not 50.0 <= request.percentile <= 100.0:
        raise UserError("The percentile is between 50 and 100 (e.g. 99.99).")


# Fewer calibration samples than this give ranges that rarely represent real data (TensorRT's
# guide calibrates on hundreds of images): the run goes on, and says so.
FEW_SAMPLES = 32


def few_samples_note(samples: int) -> list[str]:
    """The note a calibration on too few samples carries (empty when there are enough)."""
    if samples >= FEW_SAMPLES:
        return []
    return [
        f"calibrated on {samples} sample(s): ranges from so few rarely represent real data — "
        f"give at least {FEW_SAMPLES} (ideally hundreds) of the images the model will see"
    ]


@dataclass
class Calibrated:
    """What one calibration pass leaves in its working folder: the prepared (shape-inferred,
    BN-folded) fp32 model the Q/DQ model is made from, and the ranges as ORT's cache."""

    prepared: str
    ranges_path: Path
    batches: int
    samples: int


def collect_ranges(
    request: CalibrateRequest, workdir: Path, progress: Progress, prepared: str = ""
) -> Calibrated:
    """Prepare the model (unless ``prepared`` is given) and collect activation ranges over the
    calibration data; the ranges go to ``workdir/ranges.json``."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationMethod
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data

    check_method(request)
    sess = ort.InferenceSession(request.model, providers=["CPUExecutionProvider"])
    reader = FolderReader(request, sess.get_inputs(), lambda f, m: progress(0.9 * f, m))
    del sess
    ranges_path = workdir / "ranges.json"
    workdir.mkdir(parents=True, exist_ok=True)
    model = prepared or _preprocessed(request.model, workdir / "prepared.onnx", progress)
    with _root_warnings_muted():
        # histogram settings quantize_static cannot pass (CALIBRATOR_OPTIONS)
        calibrator = create_calibrator(
            Path(model),
            augmented_model_path=str(workdir / "augmented.onnx"),
            calibrate_method=getattr(CalibrationMethod, METHOD_ENUM[request.method]),
            extra_options=CALIBRATOR_OPTIONS[request.method] | {"percentile": request.percentile},
        )
        try:
            calibrator.collect_data(reader)
        except ValueError as exc:  # ORT's "No data is collected." for batches of 0 samples
            if "not finite" in str(exc) or "NaN" in str(exc):
                raise _not_finite(request, reader) from None
            if "No data" not in str(exc):
                raise
            reader.produced = 0
        if reader.produced == 0 or reader.samples == 0:
            raise UserError(
                f"{Path(request.data).name} gave no calibration samples (no batch, or arrays "
                "with 0 samples): calibration needs the inputs the model will see."
            )
        try:
            save_tensors_data(calibrator.compute_data(), ranges_path)
        except ValueError as exc:  # numpy's "supplied range of [nan, nan] is not finite"
            if "not finite" not in str(exc) and "NaN" not in str(exc):
                raise
            raise _not_finite(request, reader) from None
    del calibrator
    return Calibrated(model, ranges_path, reader.produced, reader.samples)


def _not_finite(request: CalibrateRequest, reader: FolderReader) -> UserError:
    """The calibrator met activations that are inf or NaN: said of the data that made them."""
    given = (f"{reader.not_finite:,} of its values are NaN or inf" if reader.not_finite
             else f"its values reach |{reader.peak:.3g}|")  # fmt: skip
    return UserError(
        f"{Path(request.data).name}: the model computes values that are not finite (inf or NaN) "
        f"on this calibration data ({given}), so no range can be calibrated.",
        "Calibrate on data at the scale the model sees (its preprocessing: --preprocess), "
        "with finite values.",
    )


def write_qdq(
    calibrated: Calibrated,
    output: str | Path,
    request: CalibrateRequest,
    exclude: list[str] | None = None,
) -> None:
    """The Q/DQ model from the prepared model and the collected ranges (no recalibration)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    with _root_warnings_muted():
        quantize_static(
            calibrated.prepared,
            str(output),
            None,  # the ranges come from the cache written by collect_ranges
            quant_format=QuantFormat.QDQ,
            per_channel=request.per_channel,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=exclude or None,
            calibrate_method=getattr(CalibrationMethod, METHOD_ENUM[request.method]),
            extra_options=QDQ_OPTIONS,
            calibration_cache_path=calibrated.ranges_path,
        )


def load_ranges(path: Path) -> dict[str, tuple[float, float]]:
    from onnxruntime.quantization.calibrate import load_tensors_data

    data = load_tensors_data(path)
    return {
        name: (float(np.min(td.range_value[0])), float(np.max(td.range_value[1])))
        for name, td in data.data.items()
    }


def calibrate(
    request: CalibrateRequest, progress: Progress | None = None, scratch: str | None = None
) -> CalibrationResult:
    """Calibrate ``request.model`` and write its Q/DQ model; ranges come back for TensorRT.
    Temporary models go under ``scratch`` (the worker's folder, removed however the worker
    ends) and the Q/DQ model is built beside its final name and renamed only when complete."""
    check_method(request)
    progress = progress or (lambda f, m: None)
    output = request.output or default_output(request.model, request.method)
    start = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="deploylens-calib-", dir=scratch) as workdir,
        staged_outputs(output) as stage,
    ):
        calibrated = collect_ranges(request, Path(workdir), progress)
        progress(0.92, "writing the Q/DQ model")
        partial = stage / Path(output).name
        write_qdq(calibrated, partial, request, request.exclude)
        commit_staged(stage, partial, output)  # never a half-written model under the final name
        ranges = load_ranges(calibrated.ranges_path)
    return CalibrationResult(
        output=output,
        method=request.method,
        batches=calibrated.batches,
        samples=calibrated.samples,
        seconds=time.perf_counter() - start,
        ranges=ranges,
        quantized_nodes=_count_qdq(output),
    )


@contextlib.contextmanager
def _root_warnings_muted() -> Iterator[None]:
    """ORT's quantization warns through the root logger ("consider pre-processing"); quiet it for
    this call only, so the worker's own logging is left as it was."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _preprocessed(model: str, target: Path, progress: Progress) -> str:
    """ORT's recommended preparation (shape inference, Conv+BN folding) so Q/DQ lands where a
    deployment runtime fuses it; a model it cannot prepare is calibrated as it is."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    progress(0.0, "preparing the model (shape inference, folding)")
    try:
        quant_pre_process(model, str(target), skip_symbolic_shape=True)
    except Exception:
        return model
    return str(target)


def _count_qdq(path: str) -> int:
    import onnx

    model = onnx.load(path, load_external_data=False)
    return sum(1 for n in model.graph.node if n.op_type == "QuantizeLinear")
