"""External-data files of a model: which exist, and whether they hold what the model expects.

Only file sizes are read; the weights stay on disk.
"""

from __future__ import annotations

import math
import stat
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import onnx

from deploylens.core.errors import ModelLoadError
from deploylens.core.guard import all_tensors, location_problem
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


def _whole(text: str, key: str, tensor: onnx.TensorProto) -> int:
    """An ``offset``/``length`` entry as a non-negative integer, or a ``ModelLoadError``."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ModelLoadError(
            f"initializer '{tensor.name[:80]}' has external data {key} {text[:40]!r}: "
            "not a byte count (the model is corrupt or hand-edited)"
        )
    return value


def external_tensor_span(tensor: onnx.TensorProto) -> tuple[str, int, int]:
    """(location, offset, length) of an external tensor; length from dims when not stored."""
    entries = _entries(tensor)
    offset = _whole(entries.get("offset") or "0", "offset", tensor)
    if entries.get("length"):
        length = _whole(entries["length"], "length", tensor)
    else:
        length = tensor_bytes(tensor.data_type, math.prod(tensor.dims)) or 0
    return entries.get("location", ""), offset, length


def external_locations(model: onnx.ModelProto) -> set[str]:
    """The external data file names a model's tensors (subgraphs, attributes and local
    functions included) refer to."""
    return {
        _entries(tensor).get("location", "")
        for tensor in all_tensors(model)
        if tensor_is_external(tensor)
    } - {""}


def _missing_or_odd(location: str, target: Path, model_dir: Path) -> str:
    if target.is_symlink() and not target.exists():
        return f"external data file '{location}' is a broken symbolic link"
    if target.exists():
        return f"external data file '{location}' is not a regular file (a folder or device?)"
    return f"external data file '{location}' is missing (looked in {model_dir})"


def scan_external_data(
    tensors: Iterable[onnx.TensorProto], model_dir: Path
) -> list[ExternalDataFile]:
    """Group external tensors by file and check each file against what is referenced."""
    by_location: dict[str, list[tuple[int, int]]] = {}
    broken: dict[str, str] = {}  # location → the first unreadable offset/length entry
    for tensor in tensors:
        if tensor_is_external(tensor):
            try:
                location, offset, length = external_tensor_span(tensor)
            except ModelLoadError as exc:
                location, offset, length = _entries(tensor).get("location", ""), 0, 0
                broken.setdefault(location, exc.message)
            by_location.setdefault(location, []).append((offset, length))
    files: list[ExternalDataFile] = []
    for location, spans in sorted(by_location.items()):
        referenced = sum(length for _, length in spans)
        end = max(offset + length for offset, length in spans)
        size: int | None = None
        problem = broken.get(location) or location_problem(location, model_dir)
        if problem is None:
            target = model_dir / location
            try:
                info = target.stat()
            except OSError:
                info = None
            if info is None or not stat.S_ISREG(info.st_mode):
                problem = _missing_or_odd(location, target, model_dir)
            else:
                size = info.st_size
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
