"""TensorRT's ONNX parser support per TensorRT version, from the bundled onnx-tensorrt tables."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import Any

# ONNX element type -> the names onnx-tensorrt's tables use
TRT_TYPE_NAMES = {
    "float32": "FP32",
    "float16": "FP16",
    "bfloat16": "BF16",
    "int32": "INT32",
    "int64": "INT64",
    "int8": "INT8",
    "uint8": "UINT8",
    "bool": "BOOL",
    "float64": "DOUBLE",
    "float8e4m3fn": "FP8",
    "int4": "INT4",
}


@lru_cache(maxsize=1)
def tensorrt_tables() -> dict[str, Any]:
    path = files("deploylens.resources") / "support" / "tensorrt_onnx_operators.json"
    return json.loads(path.read_text(encoding="utf-8"))


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def table_versions() -> list[str]:
    return list(tensorrt_tables()["versions"])


def table_for(version: str) -> tuple[str, dict[str, Any], str]:
    """(table version used, table, warning) — newer TensorRT falls back to the newest table."""
    versions = tensorrt_tables()["versions"]
    if version in versions:
        return version, versions[version], ""
    wanted = version_key(version)
    older = [v for v in versions if version_key(v) <= wanted]
    if not older:
        oldest = next(iter(versions))
        return (
            oldest,
            versions[oldest],
            (f"no table for TensorRT {version}; using the oldest one ({oldest})"),
        )
    used = older[-1]
    newest = list(versions)[-1]
    warning = ""
    if used == newest and wanted != version_key(newest):
        warning = (
            f"TensorRT {version} is newer than the newest bundled table ({newest}): "
            f"showing {newest}'s support, which may be out of date"
        )
    return used, versions[used], warning


def lookup(table: dict[str, Any], op: str) -> dict[str, str] | None:
    ops = table["ops"]
    if op in ops:
        return ops[op]
    lowered = {name.lower(): row for name, row in ops.items()}
    return lowered.get(op.lower())
