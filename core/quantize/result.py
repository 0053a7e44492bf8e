"""The ``quantize.calibrate`` job's typed result: the Q/DQ model written, how fast, its accuracy
against FP32 and the TensorRT cache — what ``deploylens calibrate`` prints and the Build panel's
banner says."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deploylens.core.results import Result


@dataclass
class Accuracy:
    """INT8 against FP32 on the same samples. Here, not beside the NumPy code that measures it
    (``accuracy.measure``): the CLI reads it without importing NumPy."""

    samples: int
    max_abs: float
    mean_abs: float
    rel_l2: float
    cosine: float
    top1_agreement: float | None  # None when the first output is not (batch, classes)
    data: str = ""  # which samples it was measured on

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CacheWritten:
    """A TensorRT calibration cache written from the ranges."""

    path: str
    header: str  # "TRT-…-EntropyCalibration2" …
    tensors: int


@dataclass
class CalibrationReport(Result):
    FILES = ("output", "trt_cache.path")

    model: str
    output: str  # the Q/DQ model
    method: str
    batches: int
    samples: int
    seconds: float
    quantized_nodes: int
    samples_per_s: float
    tensors: int  # tensors given a range
    notes: list[str] = field(default_factory=list)
    accuracy: Accuracy | None = None  # against FP32 (``--evaluate`` samples)
    trt_cache: CacheWritten | None = None
    kind: str = "deploylens.calibration"
    version: int = 1

    def headline(self) -> str:
        """One line: what ran and the accuracy it kept (the Build panel's banner)."""
        text = (
            f"Calibrated ({self.method}, {self.samples} samples, {self.samples_per_s:.1f}/s) → "
            f"{self.output}"
        )
        accuracy = self.accuracy
        if accuracy is not None:
            text += f"; vs fp32: max abs {accuracy.max_abs:.3g}, rel L2 {accuracy.rel_l2:.3g}"
            top1 = accuracy.top1_agreement
            text += f", top-1 agreement {top1:.1%}" if top1 is not None else ""
        if self.trt_cache is not None:
            text += f"; TensorRT cache {self.trt_cache.header}"
        return text

    def summary(self) -> str:
        lines = [
            f"{self.method}: {self.samples} samples in {self.batches} batches, "
            f"{self.seconds:.2f} s ({self.samples_per_s:.1f} samples/s); "
            f"{self.quantized_nodes} QuantizeLinear nodes → {self.output}"
        ]
        accuracy = self.accuracy
        if accuracy is not None:
            top1 = accuracy.top1_agreement
            lines.append(
                f"vs fp32 on {accuracy.samples} samples: max abs {accuracy.max_abs:.4g}, "
                f"rel L2 {accuracy.rel_l2:.3g}, cosine {accuracy.cosine:.5f}"
                + (f", top-1 agreement {top1:.1%}" if top1 is not None else "")
            )
            lines.append(f"  accuracy measured on {accuracy.data}")
        lines += [f"  note: {note}" for note in self.notes]
        cache = self.trt_cache
        if cache is not None:
            lines.append(
                f"TensorRT calibration cache {cache.path} ({cache.header}, {cache.tensors} tensors)"
            )
        return "\n".join(lines)
