"""TensorRT ≤10's INT8 calibrators fed by the same data folder as ONNX Runtime's calibration.

``make_calibrator`` subclasses ``IInt8EntropyCalibrator2`` or ``IInt8MinMaxCalibrator`` of the
given ``tensorrt`` module (so a recording fake can stand in for it in tests). TensorRT asks for
batches through ``get_batch(names)`` → device addresses, and reads/writes its cache through the
two cache methods; a cache whose header matches makes TensorRT skip the data entirely.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_bytes

BASES = {"entropy": "IInt8EntropyCalibrator2", "minmax": "IInt8MinMaxCalibrator"}


def make_calibrator(
    trt: Any,
    method: str,
    batches: Iterable[dict[str, np.ndarray]] | None,
    batch_size: int,
    cache: str,
    device: Any,
) -> Any:
    if method == "percentile":
        if not (cache and Path(cache).is_file()):
            raise UserError(
                "TensorRT has no percentile calibrator.",
                "run `deploylens calibrate MODEL --method percentile --trt-cache CACHE` and build "
                "with that cache (it is read as EntropyCalibration2)",
            )
        method = "entropy"
    if method not in BASES:
        raise UserError(f"TensorRT has no '{method}' calibrator; use entropy or minmax.")
    if not hasattr(trt, BASES[method]):
        raise UserError(
            f"TensorRT {trt.__version__} has no {BASES[method]}: TensorRT 11 removed "
            "the calibrators; calibrate into a Q/DQ model instead."
        )
    base = getattr(trt, BASES[method])

    class Calibrator(base):  # type: ignore[misc, valid-type]
        """Feeds ``batches`` to TensorRT; keeps the cache on disk, written atomically."""

        def __init__(self) -> None:
            base.__init__(self)
            self.batches_fed = 0
            self._iter: Iterator[dict[str, np.ndarray]] = iter(batches or ())

        def get_batch_size(self) -> int:
            return batch_size

        def get_batch(self, names: list[str], *_: Any) -> list[int] | None:
            batch = next(self._iter, None)
            if batch is None:
                return None  # TensorRT: calibration data is exhausted
            missing = [n for n in names if n not in batch]
            if missing:
                raise UserError(f"The calibration data has no input '{missing[0]}'.")
            self.batches_fed += 1
            return [
                device.upload(name, np.ascontiguousarray(batch[name], np.float32)) for name in names
            ]

        def read_calibration_cache(self) -> bytes | None:
            path = Path(cache) if cache else None
            return path.read_bytes() if path is not None and path.is_file() else None

        def write_calibration_cache(self, data: Any) -> None:
            if cache:
                atomic_write_bytes(cache, bytes(data))

    return Calibrator()
