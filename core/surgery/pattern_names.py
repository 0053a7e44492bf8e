"""The built-in pattern rewrites by name (``core/surgery/patterns.py`` holds them): what a steps
file and the CLI's ``--pattern`` are checked against without importing onnx, which the CLI
leaves to the worker that edits the model."""

from __future__ import annotations

PATTERN_NAMES: tuple[str, ...] = (
    "layernorm",
    "minmax_clip",
    "gelu",
    "deform_to_trt",
    "deform_from_trt",
)
