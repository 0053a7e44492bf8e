"""PyTorch outputs as NumPy arrays, flattened the way the ONNX exporters flatten them.

Both exporters flatten a model's return value with torch's pytree rules: a dict (an
``OrderedDict``, a transformers ``ModelOutput``) by its keys in insertion order, lists, tuples and
named tuples by position, ``None`` dropped. A comparison that flattened only lists and tuples made
every dict one 0-d object array ("2 outputs where PyTorch gave 1"). The key path of each leaf is
kept too: it names the output (``last_hidden_state``, ``boxes``) where the ONNX file has no
better name, and it is how detections are recognised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

Leaf = tuple[str, np.ndarray]  # (key path, value)


def flatten(value: Any, path: str = "") -> list[Leaf]:
    """Every leaf of ``value`` with its key path (``"0.boxes"``), in the exporters' order."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [leaf for k, v in value.items() for leaf in flatten(v, _join(path, str(k)))]
    fields = getattr(type(value), "_fields", None)
    if isinstance(value, tuple) and fields:  # a named tuple: its fields, in order
        return [leaf for k in fields for leaf in flatten(getattr(value, k), _join(path, k))]
    if isinstance(value, list | tuple):
        return [leaf for i, v in enumerate(value) for leaf in flatten(v, _join(path, str(i)))]
    array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
    return [(path, array)]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def to_numpy_list(value: Any) -> list[np.ndarray]:
    """The leaves of ``flatten`` alone: the outputs in the order the ONNX file declares them."""
    return [array for _, array in flatten(value)]


def output_names(leaves: list[Leaf]) -> list[str]:
    """Names for the exported outputs from their key paths where any key is a name (a dict's),
    else ``[]`` (the exporter's own names stay): ``last_hidden_state``, ``boxes``, ``0.masks``.
    A single-item list around them (a detector's one image) is left out of the name."""
    paths = [path for path, _ in leaves]
    keyed = [any(not part.isdigit() for part in p.split(".")) for p in paths]
    if not paths or not any(keyed) or not all(paths):
        return []
    if all(p.startswith("0.") for p in paths):
        shorter = [p[2:] for p in paths]
        if len(set(shorter)) == len(shorter):
            paths = shorter
    return paths if len(set(paths)) == len(paths) else []
