"""``TRACE.capture.json``: what DeployLens's own capture did (mode, batch, streams, host memory),
written beside the trace so the statistics and hints speak of the capture as it ran — a hint
never recommends what the capture already did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

KEYS = {
    "backend": str,
    "device": str,
    "mode": str,
    "batch": int,
    "streams": int,
    "host": str,
    "warmup": int,
    "iterations": int,
    "lab": str,
    # the same iterations without the profiler, first start to last end on the device's clock:
    # the diagnosis judges idle time against it (the profiler stretches the launch gaps)
    "unprofiled_gpu_span_ms": float,
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
    """The capture settings beside ``trace``, keeping only known keys of the right type (a
    hand-edited or foreign file never breaks opening the trace)."""
    from deploylens.core.errors import UserError
    from deploylens.core.files import read_json

    path = sidecar_path(trace)
    if not path.is_file():
        return None
    try:
        data = read_json(path, "capture settings", limit=1 << 20)
    except UserError:
        return None
    if not isinstance(data, dict):
        return None
    return {key: value for key, value in data.items() if key in KEYS and _typed(value, KEYS[key])}


def _typed(value: Any, kind: type) -> bool:
    """``value`` is of ``kind`` (bool is not an int here; an int is a float)."""
    return type(value) is kind or (kind is float and type(value) is int)
