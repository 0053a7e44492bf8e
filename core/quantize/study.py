"""Calibration studies: the same data calibrated several ways — entropy, MinMax, percentile
99.9 / 99.99 / 99.999, and calibration batch sizes 1, 8, 32 — as one table: each way's error
against FP32, and the activation ranges that differ most between them (TensorRT's default is
entropy, but MinMax or a percentile is sometimes better; bigger calibration batches can give
better ranges)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core.errors import UserError
from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest

METHOD_CONFIGS = (("entropy", 99.99), ("minmax", 99.99), ("percentile", 99.9),
                  ("percentile", 99.99), ("percentile", 99.999))  # fmt: skip
BATCH_SIZES = (1, 8, 32)


@dataclass
class StudyRow:
    label: str
    method: str
    percentile: float | None
    batch_size: int | None
    status: str = "ok"
    reason: str = ""
    score: Any = None
    seconds: float = 0.0


def run_study(request: SensitivityRequest, progress: Any, workdir: Path) -> dict[str, Any]:
    """Every configuration through one prepared model and one evaluation set."""
    import time

    from deploylens.core.quantize.calibrate import collect_ranges, load_ranges, write_qdq
    from deploylens.core.quantize.sensitivity import Evaluator, _labels, eval_feeds

    labels = _labels(request.labels) if request.labels else None
    evaluator = Evaluator(request.model, eval_feeds(request), labels, request.threads)
    base = CalibrateRequest(request.model, request.data, preprocess=request.preprocess,
                            batches=request.batches)  # fmt: skip
    rows = [StudyRow(f"{m} {p}" if m == "percentile" else m, m, p if m == "percentile" else None,
                     None) for m, p in METHOD_CONFIGS]  # fmt: skip
    rows += [StudyRow(f"entropy, batch {b}", "entropy", None, b) for b in BATCH_SIZES]
    ranges: dict[str, dict[str, tuple[float, float]]] = {}
    prepared = ""
    for number, row in enumerate(rows):
        progress(number / len(rows), f"calibrating: {row.label}")
        folder = workdir / f"study-{number}"
        config = replace(base, method=row.method, percentile=row.percentile or 99.99,
                         batch_size=row.batch_size)  # fmt: skip
        started = time.perf_counter()
        try:
            calibrated = collect_ranges(config, folder, lambda f, m: None, prepared)
        except UserError as exc:  # a batch size the model's fixed batch axis refuses
            row.status, row.reason = "skipped", exc.message
            continue
        prepared = calibrated.prepared
        write_qdq(calibrated, folder / "q.onnx", config)
        row.score = evaluator.score(onnx.load(folder / "q.onnx"))
        row.seconds = time.perf_counter() - started
        ranges[row.label] = load_ranges(calibrated.ranges_path)
    progress(1.0, "study done")
    return {
        "model": request.model,
        "samples": evaluator.samples,
        "fp32": evaluator.fp32(),
        "rows": rows,
        "differing_ranges": differing_ranges(ranges),
    }


def differing_ranges(
    ranges: dict[str, dict[str, tuple[float, float]]], top: int = 10
) -> list[dict[str, Any]]:
    """The tensors whose calibrated range (largest |value|) varies most across configurations,
    relative to its largest: where the choice of method or batch matters."""
    if not ranges:
        return []
    tensors = set.intersection(*(set(r) for r in ranges.values()))
    spread = []
    for tensor in tensors:
        peaks = {
            label: max(abs(lo), abs(hi)) for label, r in ranges.items() for lo, hi in [r[tensor]]
        }
        largest = max(peaks.values()) or 1.0
        spread.append((float(np.ptp(list(peaks.values())) / largest), tensor, peaks))
    spread.sort(key=lambda item: -item[0])
    return [{"tensor": t, "relative_spread": s, "peaks": p} for s, t, p in spread[:top]]
