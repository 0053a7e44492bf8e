"""TensorRT's INT8 calibration cache, the text flavour trtexec ``--calib`` and
``IInt8Calibrator.read_calibration_cache`` take::

    TRT-8601-EntropyCalibration2
    input: 3c010a14
    /conv1/Conv_output_0: 3d8e4b2a

One header naming the TensorRT version and the algorithm, then one line per tensor with the
big-endian hex of its float32 *scale* (``amax / 127``). TensorRT recalibrates when the header's
version or algorithm does not match, so we write the target's and warn when reading another's.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, read_text

ALGORITHMS = {
    "entropy": "EntropyCalibration2",
    "minmax": "MinMaxCalibration",
    "percentile": "EntropyCalibration2",  # TensorRT has no percentile calibrator; closest header
    "legacy": "LegacyCalibration",
    "entropy1": "EntropyCalibration",
}
_HEADER = re.compile(r"^TRT-(\d+)-(\w+)$")


@dataclass
class CalibrationCache:
    version: int  # NV_TENSORRT_VERSION of the writer, e.g. 8601 or 100300
    algorithm: str  # e.g. "EntropyCalibration2"
    scales: dict[str, float] = field(default_factory=dict)

    @property
    def header(self) -> str:
        return f"TRT-{self.version}-{self.algorithm}"

    def amax(self, tensor: str) -> float:
        return self.scales[tensor] * 127.0

    def to_text(self) -> str:
        lines = [self.header]
        lines += [
            f"{name}: {struct.pack('>f', scale).hex()}" for name, scale in self.scales.items()
        ]
        return "\n".join(lines) + "\n"


def version_number(version: str) -> int:
    """``"8.6.1"`` → 8601, ``"10.3.0"`` → 100300 (NV_TENSORRT_VERSION changed its packing in 10)."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]] + [0, 0]
    major, minor, patch = parts[:3]
    if major >= 10:
        return major * 10000 + minor * 100 + patch
    return major * 1000 + minor * 100 + patch


def from_ranges(
    ranges: dict[str, tuple[float, float]], version: str, method: str = "entropy"
) -> CalibrationCache:
    """Symmetric INT8 scales from calibrated ``(low, high)`` ranges (TensorRT is symmetric)."""
    scales = {}
    for name, (low, high) in ranges.items():
        amax = max(abs(float(low)), abs(float(high)))
        if not math.isfinite(amax):
            raise UserError(f"Tensor '{name}' has a non-finite calibrated range ({low}, {high}).")
        scales[name] = max(amax, 1e-12) / 127.0
    return CalibrationCache(version_number(version), ALGORITHMS.get(method, method), scales)


def parse_cache(text: str, source: str = "calibration cache") -> CalibrationCache:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise UserError(f"{source} is empty.")
    match = _HEADER.match(lines[0])
    if not match:
        raise UserError(
            f"{source} does not start with a TensorRT header such as "
            f"'TRT-8601-EntropyCalibration2' (it starts with '{lines[0][:60]}')."
        )
    cache = CalibrationCache(int(match.group(1)), match.group(2))
    for number, line in enumerate(lines[1:], 2):
        name, sep, value = line.rpartition(":")
        try:
            if not sep or len(value.strip()) != 8:
                raise ValueError
            cache.scales[name.strip()] = struct.unpack(">f", bytes.fromhex(value.strip()))[0]
        except ValueError:
            raise UserError(
                f"{source}, line {number}: expected 'tensor: <8 hex digits>', got '{line[:80]}'."
            ) from None
    return cache


def read_cache(path: str | Path) -> CalibrationCache:
    return parse_cache(read_text(path, "text calibration cache", "ascii"), Path(path).name)


def write_cache(cache: CalibrationCache, path: str | Path) -> None:
    atomic_write_text(Path(path), cache.to_text())


def mismatch(cache: CalibrationCache, version: str, method: str) -> str:
    """Why TensorRT ``version`` would ignore this cache and recalibrate ("" when it would not)."""
    want = version_number(version)
    algorithm = ALGORITHMS.get(method, method)
    if cache.version != want:
        return (
            f"the cache was written for TensorRT {cache.version} and {version} ({want}) will "
            "recalibrate: rewrite it with `deploylens calibrate … --trt-cache`"
        )
    if cache.algorithm != algorithm:
        return f"the cache holds {cache.algorithm}, the build asks for {algorithm}"
    return ""
