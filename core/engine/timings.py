"""trtexec timing outputs, without TensorRT: ``--exportProfile`` (per-layer time),
``--exportTimes`` (per-inference enqueue/H2D/compute/D2H), and the performance summary of a
trtexec log (or TREx's ``*.profile.metadata.json``, which holds the same summary parsed)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import read_bytes, read_json


@dataclass
class LayerTime:
    name: str
    total_ms: float
    average_ms: float
    median_ms: float
    percentage: float


def number(value: Any, name: str, where: str) -> float:
    """A JSON value that must be a finite number, or one sentence naming the file and field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = json.dumps(value, default=str)[:40] if not isinstance(value, str) else repr(value)
        raise UserError(f"{name}: {where} is {shown[:40]}, not a number.")
    result = float(value)
    if not np.isfinite(result):
        raise UserError(f"{name}: {where} is {value!r}, not a finite number.")
    return result


def load_profile(path: str | Path) -> tuple[int, list[LayerTime]]:
    """``--exportProfile``: ``[{"count": N}, {"name", "timeMs", "averageMs", "medianMs",
    "percentage"}, …]`` → (iterations, per-layer times)."""
    data = read_json(path, "trtexec --exportProfile JSON")
    name = Path(path).name
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise UserError(f"{name} is not trtexec --exportProfile output (a JSON list).")
    count = int(number(data[0]["count"], name, "'count'")) if "count" in data[0] else 0
    rows = data[1:] if "count" in data[0] else data
    times = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or "name" not in row or "timeMs" not in row:
            raise UserError(f"{name}: a profile entry lacks 'name' or 'timeMs': {str(row)[:80]}.")
        where = f"entry {index}'s"
        total = number(row["timeMs"], name, f"{where} 'timeMs'")
        average = number(row.get("averageMs", total), name, f"{where} 'averageMs'")
        times.append(
            LayerTime(
                str(row["name"]),
                total,
                average,
                number(row.get("medianMs", average), name, f"{where} 'medianMs'"),
                number(row.get("percentage", 0.0), name, f"{where} 'percentage'"),
            )
        )
    if not times:
        raise UserError(f"{name} lists no layers: an --exportProfile of an empty run?")
    return count, times


TIME_KEYS = ("latencyMs", "computeMs", "h2dMs", "d2hMs")
# trtexec --warmUp's default (ms). Records whose GPU compute starts earlier are warm-up runs.
DEFAULT_WARMUP_MS = 200.0
PERCENTILES = (90, 95, 99)
MAX_MS = 1e12  # 31 years: a record past it is corrupt (and overflows float32 statistics)


def load_times(
    path: str | Path, warmup_ms: float | None = None, warmup_source: str = ""
) -> dict[str, Any]:
    """``--exportTimes``: trtexec's own performance summary, reproduced from the records.

    Older trtexec releases export every record, warm-up runs included; newer ones leave them
    out. The summary uses only the records from the first whose compute starts at or after the
    warm-up time (``--warmUp``, 200 ms by default); the throughput divides their count by the
    time from that record's H2D start to the last D2H end; the percentile is the record at
    ``n - 1 - int((1 - p/100) n)``, the median the middle one (or the mean of the two). Those
    match trtexec's printed figures exactly; the mean and the throughput to ~5e-5, since the
    records carry 6 significant digits and trtexec summed the unrounded times."""
    data = read_json(path, "trtexec --exportTimes JSON")
    name = Path(path).name
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{name} is not trtexec --exportTimes output (a list of records).")
    missing = [k for k in ("latencyMs", "computeMs", "startComputeMs") if k not in data[0]]
    if missing:
        raise UserError(f"{name}: records have no '{missing[0]}' (is it an --exportProfile?).")

    def column(key: str, default: float | None = None) -> np.ndarray:
        values = []
        for index, record in enumerate(data):
            if key not in record and default is not None:
                values.append(default)
            else:
                value = number(record.get(key), name, f"record {index}'s '{key}'")
                if abs(value) > MAX_MS:
                    raise UserError(
                        f"{name}: record {index}'s '{key}' is {value:.3g} ms, not a time a "
                        "trtexec run records."
                    )
                values.append(value)
        return np.array(values, dtype=np.float64)

    if warmup_ms is None:
        warmup_ms, warmup_source = DEFAULT_WARMUP_MS, "trtexec's default --warmUp=200"
    start_compute = column("startComputeMs")
    after = np.flatnonzero(start_compute >= warmup_ms)
    warmups = int(after[0]) if after.size else 0
    kept = slice(warmups, None)
    result: dict[str, Any] = {
        "records": len(data),
        "warmup_records": warmups,
        "inferences": len(data) - warmups,
        "warmup_ms": warmup_ms,
        "warmup_source": warmup_source,
        "used": f"records {warmups}–{len(data) - 1} (the first {warmups} are warm-up runs: "
        f"compute starts before {warmup_ms:g} ms; {warmup_source})"
        if warmups
        else f"all {len(data)} records (none is a warm-up run before {warmup_ms:g} ms)",
    }
    for key in TIME_KEYS:
        result[key.removesuffix("Ms")] = trtexec_stats(column(key, 0.0)[kept])
    if all(k in data[0] for k in ("startEnqMs", "endEnqMs")):
        result["enqueue"] = trtexec_stats((column("endEnqMs") - column("startEnqMs"))[kept])
    if all(k in data[0] for k in ("startH2dMs", "endD2hMs")):
        start_h2d, end_d2h = column("startH2dMs")[kept], column("endD2hMs")[kept]
        result["end_to_end"] = trtexec_stats(end_d2h - start_h2d)
        # float32 as trtexec computes it; the records carry 6 significant digits, so the
        # throughput agrees with trtexec's to about 1e-5 (min/max/median/percentiles exactly).
        walltime = np.float32(end_d2h[-1]) - np.float32(start_h2d[0])
        if walltime > 0:
            result["walltime_s"] = float(walltime) / 1000.0
            qps = np.float32(result["inferences"]) / walltime * np.float32(1000.0)
            result["throughput_qps"] = float(qps)
    result["gpu_compute_total_s"] = result["compute"]["mean"] * result["inferences"] / 1000.0
    return result


def trtexec_stats(values: np.ndarray) -> dict[str, float]:
    """min/max/median/percentiles picked as trtexec's ``getPerformanceResult`` picks them."""
    ordered = np.sort(values.astype(np.float32))
    count = ordered.size
    middle = count // 2
    median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    stats = {
        "mean": float(values.mean(dtype=np.float64)),
        "median": float(median),
        "min": float(ordered[0]),
        "max": float(ordered[-1]),
    }
    for percentile in PERCENTILES:
        exclude = int((1 - percentile / 100) * count)
        stats[f"p{percentile}"] = float(ordered[max(count - 1 - exclude, 0)])
    return stats


_LINE = re.compile(
    r"\[I\] (Throughput|Latency|End-to-End Host Latency|Enqueue Time|H2D Latency"
    r"|GPU Compute Time|D2H Latency): (.*)$"
)
_STAT = re.compile(r"(min|max|mean|median|percentile\((\d+)%\)) = ([0-9.eE+-]+) ms")
_VERSION = re.compile(r"TensorRT version: (\d+)(?:\.(\d+))?(?:\.(\d+))?")
# "Warmup completed 100 queries over 200 ms" (the run) / "Warmup: 200ms" (the options) /
# TREx's inference options: "Duration": "3s (+ 200ms warm up)".
_WARMUP = (
    re.compile(r"Warmup completed \d+ queries over ([0-9.]+) ms"),
    re.compile(r"\[I\] Warmup: ([0-9.]+) ?ms"),
    re.compile(r"\(\+ ([0-9.]+) ?ms warm ?up\)"),
)


def warmup_of(text: str) -> float | None:
    """The warm-up time (ms) a trtexec log or TREx metadata names, if any."""
    for pattern in _WARMUP:
        if found := pattern.search(text):
            return float(found.group(1))
    return None


def parse_trtexec_log(text: str, name: str = "This log") -> dict[str, Any]:
    """The performance summary and TensorRT version of a trtexec log (what reviewers quote)."""
    summary: dict[str, Any] = {}
    version = ""
    for line in text.splitlines():
        if not version and (found := _VERSION.search(line)):
            major = found.group(1)
            if found.group(2) is None and len(major) >= 4:  # 8003 → 8.0.3 (8.x prints an int)
                number = int(major)
                version = f"{number // 1000}.{number % 1000 // 100}.{number % 100}"
            else:
                version = ".".join(g for g in found.groups() if g is not None)
        match = _LINE.search(line)
        if not match:
            continue
        key, rest = match.groups()
        try:
            if key == "Throughput":
                summary["throughput_qps"] = float(rest.split()[0])
                continue
            stats = {}
            for stat in _STAT.finditer(rest):
                label = f"p{stat.group(2)}" if stat.group(2) else stat.group(1)
                stats[label] = float(stat.group(3))
        except (ValueError, IndexError):
            raise UserError(
                f"{name}: the summary line '{line.strip()[:80]}' is unreadable."
            ) from None
        summary[key] = stats
    parsed: dict[str, Any] = {"tensorrt_version": version, "summary": summary,
                              "warmup_ms": warmup_of(text)}  # fmt: skip
    from deploylens.core.engine.log_profile import parse_log_profile

    table = parse_log_profile(text)
    if table is not None and table[1]:  # a --dumpProfile run: its table stands on its own
        layers = [LayerTime(*row) for row in table[1]]
        parsed["profile"] = {"iterations": table[0], "layers": layer_time_dicts(layers)}
    elif not summary:
        raise UserError(
            f"{name} has no trtexec performance summary ('=== Performance summary ===') nor a "
            "profile table ('=== Profile (N iterations) ==='): was the run cut short, or is it "
            "a build-only log?"
        )
    return parsed


# trtexec ≤ 8.5 prints min/max/mean/median/p99; later versions add p90 and p95.
SUMMARY_LABELS = {
    5: ("min", "max", "mean", "median", "p99"),
    7: ("min", "max", "mean", "median", "p90", "p95", "p99"),
}


def load_summary(path: str | Path) -> dict[str, Any]:
    """A trtexec log, or TREx's ``*.profile.metadata.json`` (same figures, already parsed)."""
    path = Path(path)
    head = read_bytes(path, "trtexec log")
    if path.suffix == ".json" or head.lstrip()[:1] == b"{":
        data = read_json(path, "profile metadata JSON")
        if not isinstance(data, dict) or not isinstance(data.get("performance_summary"), dict):
            raise UserError(
                f"{path.name} has no 'performance_summary' object: it is not TREx's "
                "*.profile.metadata.json (nor a trtexec log)."
            )
        perf = data["performance_summary"]
        summary: dict[str, Any] = {
            "throughput_qps": number(perf.get("Throughput", 0.0), path.name, "'Throughput'")
        }
        for key, values in perf.items():
            labels = SUMMARY_LABELS.get(len(values)) if isinstance(values, list) else None
            if labels:
                numbers = [number(v, path.name, f"'{key}'") for v in values]
                summary[key] = dict(zip(labels, numbers, strict=True))
        options = data.get("inference_options")
        device = data.get("device_information")
        return {
            "tensorrt_version": "",
            "summary": summary,
            "device": device if isinstance(device, dict) else {},
            "warmup_ms": warmup_of(str(options.get("Duration", "")))
            if isinstance(options, dict)
            else None,
        }
    return parse_trtexec_log(head.decode("utf-8", errors="replace"), path.name)


def layer_time_dicts(times: list[LayerTime]) -> list[dict[str, Any]]:
    return [asdict(t) for t in times]
