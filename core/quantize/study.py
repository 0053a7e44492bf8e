"""Calibration studies: the same data calibrated several ways — entropy, MinMax, percentile
99.9 / 99.99 / 99.999, and calibration batch sizes 1, 8, 32 — as one table: each way's error
against FP32, and the activation ranges that differ most between them (TensorRT's default is
entropy, but MinMax or a percentile is sometimes better; bigger calibration batches can give
better ranges)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core import typed
from deploylens.core.cluster import Cluster
from deploylens.core.errors import UserError
from deploylens.core.quantize.request import CalibrateRequest, Method, SensitivityRequest
from deploylens.core.quantize.sensitivity import Score
from deploylens.core.results import Evidence, Result, Verdict, judged
from deploylens.core.wording import counted

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
    status: str = "ok"  # ok | skipped (a batch the model refuses) | failed
    reason: str = ""
    score: Score | None = None
    seconds: float = 0.0


@dataclass
class RangeSpread:
    """A tensor whose calibrated range differs most across the configurations."""

    tensor: str
    relative_spread: float  # (largest − smallest peak) / largest
    peaks: dict[str, float]  # configuration → largest |value|


@dataclass
class StudyReport(Result):
    """The ``quantize.study`` job's typed result: one row per configuration."""

    model: str
    samples: int
    fp32: Score | None
    rows: list[StudyRow]
    differing_ranges: list[RangeSpread]
    executor: str = "worker"
    executor_reason: str = ""
    cluster: Cluster | None = None  # the Ray cluster the rows ran on

    def verdict(self) -> Verdict:
        """Exit 1 when a row failed or none could be scored (skipped rows — a batch the model
        refuses — are not failures); the CLI and the app alike."""
        rows = self.rows
        ok = [row for row in rows if row.status == "ok" and row.score is not None]
        failed = [row for row in rows if row.status == "failed"]
        first = next((row.reason for row in rows if row.reason), "")
        evidence = Evidence(
            len(ok),
            "calibration(s) scored",
            f"no calibration could be scored ({len(failed)} failed, "
            f"{len(rows) - len(failed)} skipped)" + (f": {first}" if first else ""),
        )
        if failed:
            names = ", ".join(row.label for row in failed[:3])
            rest = "; the rest scored." if ok else "."
            said = f"{len(failed)} of {len(rows)} calibrations failed ({names}){rest}"
            return judged(evidence, said, "fail")
        return judged(evidence, f"{len(ok)} of {len(rows)} calibrations scored.", "pass")

    def summary(self) -> str:
        lines = [
            f"calibration study of {self.model} on {counted(self.samples, 'evaluation sample')}",
            f"  {'calibration':24s} {'rel L2':>10s} {'cosine':>10s} {'top-1':>8s} {'s':>6s}",
        ]
        if self.fp32 is not None:
            lines.append(f"  {'FP32':24s} {score_cells(self.fp32)}")
        for row in self.rows:
            if row.status != "ok" or row.score is None:
                lines.append(f"  {row.label:24s} {row.status}: {row.reason}")
            else:
                lines.append(f"  {row.label:24s} {score_cells(row.score)} {row.seconds:>6.2f}")
        if self.differing_ranges:
            lines.append(
                "  ranges that differ most between calibrations (largest |value| per calibration):"
            )
        for item in self.differing_ranges[:6]:
            peaks = ", ".join(f"{k} {v:.3g}" for k, v in item.peaks.items())
            lines.append(f"    {item.tensor} (±{100 * item.relative_spread:.0f}%): {peaks}")
        return "\n".join(lines)


def score_cells(score: Score) -> str:
    top = f"{score.top1:.4f}" if score.top1 is not None else "-"
    return f"{score.rel_l2:>10.4g} {score.cosine:>10.6f} {top:>8s}"


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
              on_row: Any = None) -> StudyReport:  # fmt: skip
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


def _report(request: SensitivityRequest, samples: int, fp32: Score | None, rows: list[StudyRow],
            ranges: dict[str, dict[str, tuple[float, float]]]) -> StudyReport:  # fmt: skip
    ordered = {row.label: ranges[row.label] for row in rows if row.label in ranges}
    return StudyReport(request.model, samples, fp32, rows, differing_ranges(ordered))


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
                     on_row: Any = None) -> StudyReport:  # fmt: skip
    """Every configuration a Ray task (one core each); rows land as they finish, a failed one
    is retried once and reported, the others kept."""
    from dataclasses import asdict

    from deploylens.core import cluster

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
            done = typed.from_dict(StudyRow, outcome.value["row"], f"the row {row.label}")
            for name in (f.name for f in fields(StudyRow)):
                setattr(row, name, getattr(done, name))
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


def differing_ranges(
    ranges: dict[str, dict[str, tuple[float, float]]], top: int = 10
) -> list[RangeSpread]:
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
    return [RangeSpread(t, s, p) for s, t, p in spread[:top]]
