"""One guard in front of every reader of a model: its external data stays inside its folder.

ONNX Runtime refuses external data outside the model's folder, but TensorRT's parser,
onnx-graphsurgeon, onnxslim and a plain ``onnx.load`` follow any location — ``../../etc/…``, an
absolute path, or a symlink in the folder that points elsewhere — and read those bytes into an
engine, an edited model or a remote copy. Every job's request passes here (``Request.from_params``
checks the model fields its ``FILES`` names as inputs), and so does a remote send, before any
reader sees the file. Missing or short files are left to the readers, which say so.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError

MODEL_SUFFIXES = (".onnx",)
# a protobuf external-data entry spells its key: a model without these bytes has none
LOCATION_KEY = b"location"


def location_problem(location: str, model_dir: Path) -> str | None:
    """What is wrong with an external data location itself (before reading the file): empty,
    a NUL byte, an overlong name, absolute, outside the folder once symlinks are resolved, or
    resolving to something that is not a regular file."""
    shown = location[:60] + ("…" if len(location) > 60 else "")
    if not location:
        return "external tensors name no file (empty 'location')"
    if "\x00" in location:
        return f"external data location {shown!r} contains a NUL byte: not a file name"
    if len(location.encode("utf-8", "replace")) > 4095 or any(
        len(part.encode("utf-8", "replace")) > 255 for part in location.split("/")
    ):
        return f"external data location '{shown}' is longer than a file name can be"
    if os.path.isabs(location):
        return f"'{shown}' points outside the model's folder; runtimes refuse it"
    try:
        target = (model_dir / location).resolve()
        inside = target.is_relative_to(model_dir.resolve())
    except (OSError, RuntimeError):  # a symlink loop on the way
        return f"external data file '{shown}' is a symbolic link loop"
    if not inside:
        return f"'{shown}' points outside the model's folder; runtimes refuse it"
    try:
        info = target.stat()
    except OSError:
        return None  # missing: each reader says so in its own words
    if not stat.S_ISREG(info.st_mode):
        return f"external data file '{shown}' is not a regular file (a folder, FIFO or device)"
    return None


def all_tensors(model: Any) -> Iterator[Any]:
    """Every TensorProto of a model that can carry external data: initializers, sparse
    initializers, tensor attributes (Constant's value included), in every subgraph and local
    function."""
    yield from _graph_tensors(model.graph)
    for function in model.functions:
        yield from _node_tensors(function.node)


def _graph_tensors(graph: Any) -> Iterator[Any]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Iterable[Any]) -> Iterator[Any]:
    for node in nodes:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            for sparse in [attribute.sparse_tensor, *attribute.sparse_tensors]:
                yield sparse.values
                yield sparse.indices
            if attribute.HasField("g"):
                yield from _graph_tensors(attribute.g)
            for graph in attribute.graphs:
                yield from _graph_tensors(graph)


def _mentions_external_data(path: Path) -> bool:
    """Whether the file's bytes hold the external-data key at all (a fast scan: most models
    keep their weights inside and need no parse here)."""
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(LOCATION_KEY) >= 0
    except (OSError, ValueError):
        return False  # not a readable regular file: the reader says what it is


def check_model_file(path: str | Path) -> None:
    """Raise ``UserError`` when the ONNX model at ``path`` names external data outside its
    folder (or a FIFO, device or folder); returns quietly otherwise, and for files that are not
    models (their own reader says what they are)."""
    path = Path(path)
    if not path.is_file() or not _mentions_external_data(path):
        return  # before importing onnx: a job that never parses the model (a build) pays nothing
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        raise UserError(
            f"{path.name} names external data but does not parse as an ONNX model, so where "
            "its weights come from cannot be checked: refused."
        ) from None
    folder = path.parent
    seen: set[str] = set()
    for tensor in all_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if location in seen:
            continue
        seen.add(location)
        problem = location_problem(location, folder)
        if problem:
            raise UserError(
                f"{path.name}: {problem}. DeployLens reads a model's weights only from its own "
                "folder.",
                "Move the external data files beside the model (onnx.save with "
                "save_as_external_data=True writes them there).",
            )


def _value(params: Any, field: str) -> Any:
    value = params
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def check_model_inputs(files: dict[str, str], params: Any) -> None:
    """Guard every model a request reads: the ``FILES`` fields of kind "in"/"inout" whose
    value is an ONNX file."""
    for field, kind in files.items():
        if kind not in ("in", "inout"):
            continue
        value = _value(params, field)
        if isinstance(value, str) and value.lower().endswith(MODEL_SUFFIXES):
            check_utf8_path(value)
            check_model_file(value)


def check_utf8_path(path: str) -> None:
    """ONNX Runtime, TensorRT and onnx's checker take a path as UTF-8 text: a file name that is
    not (bytes from another locale) is said here, not as a binding's type error."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise UserError(
            f"{shown}: the file or folder name is not UTF-8 text, and ONNX Runtime and "
            "TensorRT open models only by UTF-8 paths.",
            "Rename the file (or its folder) to UTF-8 text.",
        ) from None
