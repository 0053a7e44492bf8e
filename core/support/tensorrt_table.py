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
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


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


# Typos in onnx-tensorrt's tables, read as what they mean (10.1's ConstantOfShape says "INF64").
TYPE_TYPOS = {"INF64": "INT64"}
# TensorRT ≤ 8.6 tables: "TensorRT will attempt to cast down INT64 to INT32 and DOUBLE down to
# FLOAT, clamping values to +-INT_MAX or +-FLT_MAX if necessary."
CAST_DOWN = {"INT64": "INT32", "DOUBLE": "FP32"}


def row_types(row: dict[str, str]) -> set[str]:
    """The "supported types" cell as a set, typos corrected and empty entries dropped."""
    found = (t.strip() for t in row.get("types", "").split(","))
    return {TYPE_TYPOS.get(t, t) for t in found if t}


def casts_int64_down(table_version: str) -> bool:
    """Whether that table's parser casts INT64/DOUBLE down (the note every table ≤ 8.6 has;
    9.x and 10.x list INT64 among the types themselves)."""
    return version_key(table_version) < (9,)


@lru_cache(maxsize=1)
def shipped_plugins() -> dict[str, dict[str, Any]]:
    """The plugins classic TensorRT's plugin library ships (name → {versions, deprecated}),
    from its documented table of contents (resources/support/tensorrt_plugins.json)."""
    path = files("deploylens.resources") / "support" / "tensorrt_plugins.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {p["name"]: p for p in data["plugins"]}


# Node domains TensorRT's ONNX parser reads: the default one, and "trt.plugins", whose nodes it
# imports by op type (a native importer first, else a plugin of that name)
PARSER_DOMAINS = ("ai.onnx", "trt.plugins")


def lookup(table: dict[str, Any], op: str) -> dict[str, str] | None:
    ops = table["ops"]
    if op in ops:
        result: dict[str, str] | None = ops[op]
        return result
    lowered = {name.lower(): row for name, row in ops.items()}
    return lowered.get(op.lower())
