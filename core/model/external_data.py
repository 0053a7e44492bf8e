"""External-data files of a model: which exist, and whether they hold what the model expects.

Only file sizes are read; the weights stay on disk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import onnx

from deploylens.core.model.dtypes import tensor_bytes


@dataclass
class ExternalDataFile:
    location: str
    tensors: int
    bytes_referenced: int
    present: bool
    size_on_disk: int | None
    problem: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tensor_is_external(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == onnx.TensorProto.EXTERNAL


def _entries(tensor: onnx.TensorProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


def external_tensor_span(tensor: onnx.TensorProto) -> tuple[str, int, int]:
    """(location, offset, length) of an external tensor; length from dims when not stored."""
    entries = _entries(tensor)
    offset = int(entries.get("offset", 0) or 0)
    if entries.get("length"):
        length = int(entries["length"])
    else:
        length = tensor_bytes(tensor.data_type, math.prod(tensor.dims)) or 0
    return entries.get("location", ""), offset, length


def external_locations(model: onnx.ModelProto) -> set[str]:
    """The external data file names a model's initializers (subgraphs included) refer to."""
    from deploylens.core.model.summary import iter_subgraphs

    graphs = [model.graph, *iter_subgraphs(model.graph.node)]
    return {
        _entries(tensor).get("location", "")
        for graph in graphs
        for tensor in graph.initializer
        if tensor_is_external(tensor)
    } - {""}


def scan_external_data(
    tensors: Iterable[onnx.TensorProto], model_dir: Path
) -> list[ExternalDataFile]:
    """Group external tensors by file and check each file against what is referenced."""
    by_location: dict[str, list[tuple[int, int]]] = {}
    for tensor in tensors:
        if tensor_is_external(tensor):
            location, offset, length = external_tensor_span(tensor)
            by_location.setdefault(location, []).append((offset, length))
    files: list[ExternalDataFile] = []
    for location, spans in sorted(by_location.items()):
        referenced = sum(length for _, length in spans)
        end = max(offset + length for offset, length in spans)
        problem: str | None = None
        size: int | None = None
        target = (model_dir / location).resolve()
        if not location:
            problem = "external tensors name no file (empty 'location')"
        elif os.path.isabs(location) or not target.is_relative_to(model_dir.resolve()):
            problem = f"'{location}' points outside the model's folder; runtimes refuse it"
        elif not target.is_file():
            problem = f"external data file '{location}' is missing (looked in {model_dir})"
        else:
            size = target.stat().st_size
            if size < end:
                problem = (
                    f"external data file '{location}' is {size:,} bytes but the model reads "
                    f"up to byte {end:,}: it is truncated or belongs to another export"
                )
        files.append(
            ExternalDataFile(
                location=location,
                tensors=len(spans),
                bytes_referenced=referenced,
                present=size is not None,
                size_on_disk=size,
                problem=problem,
            )
        )
    return files
