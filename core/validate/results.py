"""Validation results on disk: JSON to re-open (GUI, CLI), CSV of the per-node table.

Results are written atomically and read back with checks, so a truncated or foreign file gets a
clear message instead of a half-filled panel. NaN/inf are written as JSON's non-standard
``NaN``/``Infinity`` tokens, which Python, pandas and the browser's JSON5 readers accept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, csv_text, read_json
from deploylens.core.validate.run import RESULT_VERSION

KIND = "deploylens.validation"
LAYER_COLUMNS = (
    "index",
    "node",
    "op_type",
    "tensor",
    "module",
    "passed",
    "max_abs",
    "mean_abs",
    "max_rel",
    "rel_l2",
    "cosine",
    "within",
    "nan",
    "error_in",
    "jump",
    "note",
    "reason",
)
OUTPUT_COLUMNS = ("name", "passed", "max_abs", "mean_abs", "max_rel", "cosine", "within", "nan")


def save_result(result: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    atomic_write_text(path, json.dumps(result, indent=1))
    return path


def load_result(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    data = read_json(path, "validation result")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{path.name} is not a DeployLens validation result (no kind '{KIND}').")
    if int(data.get("version", 0)) > RESULT_VERSION:
        raise UserError(
            f"{path.name} was written by a newer DeployLens (result version {data['version']})."
        )
    for key in ("model", "outputs", "passed", "tolerances"):
        if key not in data:
            raise UserError(f"{path.name} is incomplete: it has no '{key}'.")
    return data


def layers_csv(result: dict[str, Any]) -> str:
    """The per-node table, one row per compared tensor, in topological order."""
    layers = (result.get("layerwise") or {}).get("layers", [])
    return csv_text(LAYER_COLUMNS, layers)


def outputs_csv(result: dict[str, Any]) -> str:
    return csv_text(OUTPUT_COLUMNS, result["outputs"])


def save_csv(result: dict[str, Any], path: str | Path) -> Path:
    """Layers when the result has them, otherwise the outputs."""
    path = Path(path)
    text = layers_csv(result) if result.get("layerwise") else outputs_csv(result)
    atomic_write_text(path, text)
    return path


def node_errors(result: dict[str, Any], metric: str = "rel_l2") -> dict[str, float]:
    """``{onnx node name: error}`` for the graph overlay (max over the node's tensors)."""
    errors: dict[str, float] = {}
    for layer in (result.get("layerwise") or {}).get("layers", []):
        value = layer.get(metric)
        if isinstance(value, int | float) and value == value:  # not NaN
            errors[layer["node"]] = max(errors.get(layer["node"], 0.0), float(value))
    return errors
