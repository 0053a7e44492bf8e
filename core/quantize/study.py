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
from deploylens.core.quantize.request import CalibrateRequest, Method, SensitivityRequest

METHOD_CONFIGS: tuple[tuple[Method, float], ...] = (
    ("entropy", 99.99), ("minmax", 99.99), ("percentile", 99.9), ("percentile", 99.99),
    ("percentile", 99.999),
)  # fmt: skip
BATCH_SIZES = (1, 8, 32)


@dataclass
class StudyRow:
    label: str
    method: Method
    percentile: float | None
    batch_size: int | None
    status: str = "ok"
    reason: str = ""
    score: Any = None
    seconds: float = 0.0


def study_rows() -> list[StudyRow]:
    rows = [StudyRow(f"{m} {p}" if m == "percentile" else m, m, p if m == "percentile" else None,
                     None) for m, p in METHOD_CONFIGS]  # fmt: skip
    return rows + [StudyRow(f"entropy, batch {b}", "entropy", None, b) for b in BATCH_SIZES]


def _evaluation(request: SensitivityRequest, threads: int) -> tuple[Any, CalibrateRequest]:
    """The FP32 evaluator and the calibration every row varies, from the study's request."""
    from deploylens.core.data.arrays import read_labels
    from deploylens.core.quantize.sensitivity import Evaluator, eval_feeds

    labels = read_labels(request.labels) if request.labels else None
    evaluator = Evaluator(request.model, eval_feeds(request), labels, threads)
    base = CalibrateRequest(request.model, request.data, preprocess=request.preprocess,
                            batches=request.batches)  # fmt: skip
    return evaluator, base


def run_row(row: StudyRow, base: CalibrateRequest, evaluator: Any, folder: Path,
            prepared: str = "") -> tuple[str, dict[str, tuple[float, float]] | None]:  # fmt: skip
    """One configuration, in ``folder``: calibrate, write the Q/DQ model, score it against
    FP32 (filled into ``row``). Returns (the prepared model, to reuse; its ranges, or None
    when the configuration was skipped)."""
    import time

    from deploylens.core.quantize.calibrate import collect_ranges, load_ranges, write_qdq

    config = replace(base, method=row.method, percentile=row.percentile or 99.99,
                     batch_size=row.batch_size)  # fmt: skip
    started = time.perf_counter()
    try:
        calibrated = collect_ranges(config, folder, lambda f, m: None, prepared)
    except UserError as exc:  # a batch size the model's fixed batch axis refuses
        row.status, row.reason = "skipped", exc.message
        return prepared, None
    write_qdq(calibrated, folder / "q.onnx", config)
    row.score = evaluator.score(onnx.load(folder / "q.onnx"))
    row.seconds = time.perf_counter() - started
    return calibrated.prepared, load_ranges(calibrated.ranges_path)


def run_study(request: SensitivityRequest, progress: Any, workdir: Path,
              on_row: Any = None) -> dict[str, Any]:  # fmt: skip
    """Every configuration through one prepared model and one evaluation set, one after
    another in this process; ``on_row`` gets each row as it is done."""
    evaluator, base = _evaluation(request, request.threads)
    rows = study_rows()
    ranges: dict[str, dict[str, tuple[float, float]]] = {}
    prepared = ""
    for number, row in enumerate(rows):
        progress(number / len(rows), f"calibrating: {row.label}")
        prepared, found = run_row(row, base, evaluator, workdir / f"study-{number}", prepared)
        if found is not None:
            ranges[row.label] = found
        if on_row is not None:
            on_row(row)
    progress(1.0, "study done")
    return _report(request, evaluator.samples, evaluator.fp32(), rows, ranges)


def _report(request: SensitivityRequest, samples: int, fp32: Any, rows: list[StudyRow],
            ranges: dict[str, dict[str, tuple[float, float]]]) -> dict[str, Any]:  # fmt: skip
    ordered = {row.label: ranges[row.label] for row in rows if row.label in ranges}
    return {"model": request.model, "samples": samples, "fp32": fp32, "rows": rows,
            "differing_ranges": differing_ranges(ordered)}  # fmt: skip


def row_on_node(request: dict[str, Any], row: dict[str, Any], shipped: dict[str, Any]
                ) -> dict[str, Any]:  # fmt: skip
    """A Ray task: one configuration (``run_row``) on whichever node Ray chose, inputs
    shipped by content, on one thread (the other cores run other rows)."""
    import tempfile
    from dataclasses import asdict

    from deploylens.core.cluster import materialize

    checked = SensitivityRequest.from_params(request)
    local: dict[str, Any] = {name: materialize(item) for name, item in shipped.items()}
    checked = replace(checked, **local)
    done = StudyRow(**row)
    evaluator, base = _evaluation(checked, 1)
    with tempfile.TemporaryDirectory(prefix="deploylens-study-") as scratch:
        _, ranges = run_row(done, base, evaluator, Path(scratch))
    return {"row": asdict(done), "ranges": ranges, "samples": evaluator.samples,
            "fp32": asdict(evaluator.fp32())}  # fmt: skip


def run_study_on_ray(request: SensitivityRequest, progress: Any, should_stop: Any,
                     on_row: Any = None) -> dict[str, Any]:  # fmt: skip
    """Every configuration a Ray task (one core each); rows land as they finish, a failed one
    is retried once and reported, the others kept."""
    from dataclasses import asdict

    from deploylens.core import cluster
    from deploylens.core.quantize.sensitivity import Score

    paths = {name: getattr(request, name) for name in ("model", "data", "eval_data", "labels")}
    paths = {name: value for name, value in paths.items() if value}
    shipped_by_path = cluster.put_files(Path(value) for value in paths.values())
    shipped = {name: shipped_by_path[str(Path(value))] for name, value in paths.items()}
    rows = study_rows()
    by_label = {row.label: row for row in rows}
    ranges: dict[str, dict[str, tuple[float, float]]] = {}
    facts: dict[str, Any] = {}
    calls = [cluster.Call(row.label, "deploylens.core.quantize.study:row_on_node",
                          {"request": request.to_params(), "row": asdict(row),
                           "shipped": shipped}) for row in rows]  # fmt: skip

    def landed(outcome: Any) -> None:
        row = by_label[outcome.key]
        if outcome.status == "ok":
            for name, value in outcome.value["row"].items():
                setattr(row, name, value)
            if outcome.value["ranges"] is not None:
                ranges[row.label] = outcome.value["ranges"]
            facts.setdefault("samples", outcome.value["samples"])
            facts.setdefault("fp32", Score(**outcome.value["fp32"]))
        else:
            row.status = "failed"
        row.reason = "; ".join(text for text in (row.reason, outcome.note()) if text)
        progress(outcome.done / outcome.of, f"{row.label}: {row.status}")
        if on_row is not None:
            on_row(row)

    cluster.fan_out(calls, landed, should_stop)
    return _report(request, facts.get("samples", 0), facts.get("fp32"), rows, ranges)


def study_verdict(result: dict[str, Any]) -> tuple[int, str]:
    """(exit status, one sentence) of a study, for the CLI and the app alike: 1 when a row
    failed or none could be scored (skipped rows — a batch the model refuses — are not
    failures)."""
    rows = result.get("rows") or []
    ok = [row for row in rows if row.get("status") == "ok" and row.get("score") is not None]
    failed = [row for row in rows if row.get("status") == "failed"]
    if not ok:
        first = next((row.get("reason") for row in rows if row.get("reason")), "")
        return 1, (
            f"no calibration could be scored ({len(failed)} failed, "
            f"{len(rows) - len(failed)} skipped)" + (f": {first}" if first else "") + "."
        )
    if failed:
        names = ", ".join(row["label"] for row in failed[:3])
        return 1, f"{len(failed)} of {len(rows)} calibrations failed ({names}); the rest scored."
    return 0, f"{len(ok)} of {len(rows)} calibrations scored."


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
