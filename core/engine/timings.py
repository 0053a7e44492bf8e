"""trtexec timing outputs, without TensorRT: ``--exportProfile`` (per-layer time),
``--exportTimes`` (per-inference enqueue/H2D/compute/D2H), and the performance summary of a
trtexec log (or TREx's ``*.profile.metadata.json``, which holds the same summary parsed)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import read_json


@dataclass
class LayerTime:
    name: str
    total_ms: float
    average_ms: float
    median_ms: float
    percentage: float


def load_profile(path: str | Path) -> tuple[int, list[LayerTime]]:
    """``--exportProfile``: ``[{"count": N}, {"name", "timeMs", "averageMs", "medianMs",
    "percentage"}, …]`` → (iterations, per-layer times)."""
    data = read_json(path, "trtexec --exportProfile JSON")
    name = Path(path).name
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise UserError(f"{name} is not trtexec --exportProfile output (a JSON list).")
    count = int(data[0].get("count", 0)) if "count" in data[0] else 0
    rows = data[1:] if "count" in data[0] else data
    times = []
    for row in rows:
        if not isinstance(row, dict) or "name" not in row or "timeMs" not in row:
            raise UserError(f"{name}: a profile entry lacks 'name' or 'timeMs': {str(row)[:80]}.")
        times.append(
            LayerTime(
                str(row["name"]),
                float(row["timeMs"]),
                float(row.get("averageMs", row["timeMs"])),
                float(row.get("medianMs", row.get("averageMs", row["timeMs"]))),
                float(row.get("percentage", 0.0)),
            )
        )
    return count, times


TIME_KEYS = ("latencyMs", "computeMs", "h2dMs", "d2hMs")


def load_times(path: str | Path) -> dict[str, Any]:
    """``--exportTimes``: statistics per stage and throughput from the per-inference records."""
    data = read_json(path, "trtexec --exportTimes JSON")
    name = Path(path).name
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{name} is not trtexec --exportTimes output (a list of records).")
    missing = [k for k in ("latencyMs", "computeMs") if k not in data[0]]
    if missing:
        raise UserError(f"{name}: records have no '{missing[0]}' (is it an --exportProfile?).")
    result: dict[str, Any] = {"inferences": len(data)}
    for key in TIME_KEYS:
        values = np.array([float(r.get(key, 0.0)) for r in data])
        result[key.removesuffix("Ms")] = _stats(values)
    enqueue = np.array(
        [float(r["endEnqMs"]) - float(r["startEnqMs"]) for r in data if "endEnqMs" in r]
    )
    if enqueue.size:
        result["enqueue"] = _stats(enqueue)
    starts = [float(r["startComputeMs"]) for r in data if "startComputeMs" in r]
    ends = [float(r["endComputeMs"]) for r in data if "endComputeMs" in r]
    if starts and ends and max(ends) > min(starts):
        result["throughput_qps"] = len(data) / ((max(ends) - min(starts)) / 1000.0)
    return result


def _stats(values: np.ndarray) -> dict[str, float]:
    return {
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
        "p99": float(np.percentile(values, 99)),
        "min": float(values.min()),
        "max": float(values.max()),
    }


_LINE = re.compile(
    r"\[I\] (Throughput|Latency|End-to-End Host Latency|Enqueue Time|H2D Latency"
    r"|GPU Compute Time|D2H Latency): (.*)$"
)
_STAT = re.compile(r"(min|max|mean|median|percentile\((\d+)%\)) = ([0-9.eE+-]+) ms")
_VERSION = re.compile(r"TensorRT version: (\d+)(?:\.(\d+))?(?:\.(\d+))?")


def parse_trtexec_log(text: str) -> dict[str, Any]:
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
        if key == "Throughput":
            summary["throughput_qps"] = float(rest.split()[0])
            continue
        stats = {}
        for stat in _STAT.finditer(rest):
            label = f"p{stat.group(2)}" if stat.group(2) else stat.group(1)
            stats[label] = float(stat.group(3))
        summary[key] = stats
    if not summary:
        raise UserError(
            "This log has no trtexec performance summary ('=== Performance summary ===')."
        )
    return {"tensorrt_version": version, "summary": summary}


# trtexec ≤ 8.5 prints min/max/mean/median/p99; later versions add p90 and p95.
SUMMARY_LABELS = {
    5: ("min", "max", "mean", "median", "p99"),
    7: ("min", "max", "mean", "median", "p90", "p95", "p99"),
}


def load_summary(path: str | Path) -> dict[str, Any]:
    """A trtexec log, or TREx's ``*.profile.metadata.json`` (same figures, already parsed)."""
    path = Path(path)
    if path.suffix == ".json":
        data = read_json(path, "profile metadata JSON")
        if not isinstance(data, dict) or "performance_summary" not in data:
            raise UserError(f"{path.name} has no 'performance_summary'.")
        perf = data["performance_summary"]
        summary: dict[str, Any] = {"throughput_qps": float(perf.get("Throughput", 0.0))}
        for key, values in perf.items():
            labels = SUMMARY_LABELS.get(len(values)) if isinstance(values, list) else None
            if labels:
                summary[key] = dict(zip(labels, values, strict=True))
        return {
            "tensorrt_version": "",
            "summary": summary,
            "device": data.get("device_information", {}),
        }
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"{path} cannot be read: {exc}.") from None
    return parse_trtexec_log(text)


def layer_time_dicts(times: list[LayerTime]) -> list[dict[str, Any]]:
    return [asdict(t) for t in times]
