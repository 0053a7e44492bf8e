"""Validation results on disk: JSON to re-open (GUI, CLI), CSV of the per-node table.

Results are written atomically and read back with checks, so a truncated or foreign file gets a
clear message instead of a half-filled panel. NaN/inf are written as JSON's non-standard
``NaN``/``Infinity`` tokens, which Python, pandas and the browser's JSON5 readers accept.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, csv_text, read_json
from deploylens.core.validate.result import KIND, RESULT_VERSION, ValidationResult

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


def save_result(result: ValidationResult, path: str | Path) -> Path:
    path = Path(path)
    atomic_write_text(path, json.dumps(result.to_dict(), indent=1))
    return path


def load_result(path: str | Path) -> ValidationResult:
    """A saved result, read as strictly as a worker's answer: a foreign, newer or incomplete
    file is a clear error, never a half-filled panel."""
    path = Path(path)
    data = read_json(path, "validation result")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{path.name} is not a DeployLens validation result (no kind '{KIND}').")
    version = data.get("version", 0)
    if not isinstance(version, int) or version > RESULT_VERSION:
        raise UserError(
            f"{path.name} was written by a newer DeployLens (result version {version})."
        )
    data.pop("verdict", None)  # what ``--json`` adds: derived from the rest, never trusted
    return ValidationResult.from_dict(data, f"{path.name}")


def layers_csv(result: ValidationResult) -> str:
    """The per-node table, one row per compared tensor, in topological order."""
    layers = result.layerwise.layers if result.layerwise is not None else []
    return csv_text(LAYER_COLUMNS, (asdict(layer) for layer in layers))


def outputs_csv(result: ValidationResult) -> str:
    return csv_text(OUTPUT_COLUMNS, (asdict(output) for output in result.outputs))


def save_csv(result: ValidationResult, path: str | Path) -> Path:
    """Layers when the result has them, otherwise the outputs."""
    path = Path(path)
    text = layers_csv(result) if result.layerwise is not None else outputs_csv(result)
    atomic_write_text(path, text)
    return path
