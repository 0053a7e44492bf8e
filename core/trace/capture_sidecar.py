"""``TRACE.capture.json``: what DeployLens's own capture did (mode, batch, streams, host memory),
written beside the trace so the statistics and hints speak of the capture as it ran — a hint
never recommends what the capture already did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deploylens.core.own_files import Range, check

COUNT = Range(1, 2**31 - 1)
KEYS = {
    "backend": str,
    "device": str,
    "mode": str,
    "batch": COUNT,
    "streams": COUNT,
    "host": str,
    "warmup": Range(0, 2**31 - 1),
    "iterations": COUNT,
    "lab": str,
    # the same iterations without the profiler, first start to last end on the device's clock:
    # the diagnosis judges idle time against it (the profiler stretches the launch gaps); a day
    # at most — NaN, infinities and 1e308 are a hand-edited file's, never a capture's
    "unprofiled_gpu_span_ms": Range(1e-6, 86_400_000.0, integer=False),
}


def sidecar_path(trace: str | Path) -> Path:
    path = Path(trace)
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return path.with_name(name + ".capture.json")


def write_sidecar(trace: str | Path, capture: dict[str, Any]) -> None:
    from deploylens.core.files import write_json

    write_json(sidecar_path(trace), capture)


def read_sidecar(trace: str | Path) -> dict[str, Any] | None:
    """The capture settings beside ``trace``, keeping only known keys of the right type and
    range (a hand-edited or foreign file — a shared sweep folder carries it — never breaks
    opening the trace, nor makes a NaN span reach the diagnosis)."""
    from deploylens.core.errors import UserError
    from deploylens.core.own_files import read_own_json

    path = sidecar_path(trace)
    if not path.is_file():
        return None
    try:
        data = read_own_json(path, "capture settings", 1 << 20)
    except UserError:
        return None
    if not isinstance(data, dict):
        return None
    return {key: value for key, value in data.items() if key in KEYS and _fits(value, KEYS[key])}


def _fits(value: Any, schema: Any) -> bool:
    from deploylens.core.errors import UserError

    try:
        check(value, schema, "")
    except UserError:
        return False
    return True
