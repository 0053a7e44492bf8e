"""A model read without copying its inline weights: the graph parsed, each large weight an array
over the memory-mapped file.

``onnx.load`` reads the whole file into one bytes object and the parse copies every weight again
into its own: for vit_b_16 (346 MB) 0.35 s of CPU in validate, which needs the weights' bytes
only to hand them to ONNX Runtime. Here the protobuf wire format is walked down to the main
graph's initializers; a large weight stored as plain ``raw_data`` is left in the file (its
tensor refers NOWHERE, as ``weightless`` does) and becomes a read-only NumPy view of the mapped
bytes; everything else is copied as it is and parsed by onnx. Any file this walk does not
follow exactly (a text format, a truncated length, a field read twice) gives ``None``, and the
caller reads it with ``onnx.load``, whose errors users already get.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from deploylens.core.model.dtypes import tensor_bytes
from deploylens.core.model.weightless import KEEP_BYTES, only_raw_data, refer_nowhere

MODEL_GRAPH = 7  # ModelProto.graph
GRAPH_INITIALIZER = 5  # GraphProto.initializer
TENSOR_RAW_DATA = 9  # TensorProto.raw_data
LENGTH_DELIMITED = 2

# Element types NumPy holds natively as stored (little-endian raw_data); others stay in the model.
MAPPED_TYPES: dict[int, np.dtype[Any]] = {
    onnx.TensorProto.FLOAT: np.dtype("<f4"),
    onnx.TensorProto.DOUBLE: np.dtype("<f8"),
    onnx.TensorProto.FLOAT16: np.dtype("<f2"),
    onnx.TensorProto.INT8: np.dtype("i1"),
    onnx.TensorProto.INT16: np.dtype("<i2"),
    onnx.TensorProto.INT32: np.dtype("<i4"),
    onnx.TensorProto.INT64: np.dtype("<i8"),
    onnx.TensorProto.UINT8: np.dtype("u1"),
    onnx.TensorProto.UINT16: np.dtype("<u2"),
    onnx.TensorProto.UINT32: np.dtype("<u4"),
    onnx.TensorProto.UINT64: np.dtype("<u8"),
    onnx.TensorProto.BOOL: np.dtype("?"),
}


class _NotFollowed(Exception):
    """The bytes are not a model this walk follows exactly: ``onnx.load`` reads it instead."""


@dataclass
class MappedModel:
    """``model``: the ModelProto whose tensors named in ``arrays`` refer NOWHERE; ``arrays``:
    those weights, read-only views of the mapped file (they keep the mapping open)."""

    model: onnx.ModelProto
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def external_tensors_loaded(self, base_dir: str | Path) -> None:
        """Read the tensors the file keeps in other files (``onnx.load``'s second step); the
        mapped ones are skipped — onnx would look for a file called NOWHERE."""
        from onnx.external_data_helper import load_external_data_for_model

        mapped = [t for t in self.model.graph.initializer if t.name in self.arrays]
        for tensor in mapped:
            tensor.data_location = onnx.TensorProto.DEFAULT
        try:
            load_external_data_for_model(self.model, str(base_dir))
        finally:
            for tensor in mapped:
                tensor.data_location = onnx.TensorProto.EXTERNAL


def read_mapped(path: str | Path) -> MappedModel | None:
    """The model at ``path`` with its large plain weights mapped, not copied; ``None`` where
    the file is not one this reader follows (then ``onnx.load`` it)."""
    suffix = Path(path).suffix
    if onnx.serialization.registry.get_format_from_file_extension(suffix) not in (None, "protobuf"):
        return None  # onnx.load reads .json/.onnxtxt as text
    try:
        with open(path, "rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # not a regular file, or empty
        return None
    spans: dict[str, tuple[int, int, int, list[int]]] = {}
    try:
        light = b"".join(_model(data, spans))
        model = onnx.ModelProto.FromString(light)
    except (_NotFollowed, IndexError, DecodeError):
        return None
    arrays = {}
    for name, (elem_type, offset, count, dims) in spans.items():
        array = np.frombuffer(data, MAPPED_TYPES[elem_type], count, offset)
        arrays[name] = array.reshape(dims)
    return MappedModel(model, arrays)


def _varint(data: mmap.mmap, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _NotFollowed


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data: mmap.mmap, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, tag start, value start, value end) of each field in
    ``data[start:end]``; a length-delimited value spans its bytes, without the length."""
    pos = start
    while pos < end:
        tag, value = _varint(data, pos)
        wire = tag & 7
        if wire == 0:
            _, after = _varint(data, value)
        elif wire == 1:
            after = value + 8
        elif wire == LENGTH_DELIMITED:
            length, value = _varint(data, value)
            after = value + length
        elif wire == 5:
            after = value + 4
        else:  # groups: no ONNX field is one
            raise _NotFollowed
        if after > end:
            raise _NotFollowed  # truncated
        yield tag >> 3, wire, pos, value, after
        pos = after


def _model(data: mmap.mmap, spans: dict[str, tuple[int, int, int, list[int]]]) -> Iterator[bytes]:
    graphs = 0
    for number, wire, tag, start, end in _fields(data, 0, len(data)):
        if number == MODEL_GRAPH and wire == LENGTH_DELIMITED:
            graphs += 1
            if graphs > 1:
                raise _NotFollowed  # protobuf would merge the two: onnx.load does that
            graph = b"".join(_graph(data, start, end, spans))
            yield _tag(MODEL_GRAPH) + _encode_varint(len(graph))
            yield graph
        else:
            yield data[tag:end]


def _tag(number: int) -> bytes:
    return _encode_varint(number << 3 | LENGTH_DELIMITED)


def _graph(
    data: mmap.mmap, start: int, end: int, spans: dict[str, tuple[int, int, int, list[int]]]
) -> Iterator[bytes]:
    run = start  # fields copied as they are, in runs: a node is never parsed here
    for number, wire, tag, value, after in _fields(data, start, end):
        if number != GRAPH_INITIALIZER or wire != LENGTH_DELIMITED:
            continue
        tensor = _tensor(data, value, after, spans)
        if tensor is None:
            continue  # kept as it is, in the run
        yield data[run:tag]
        yield _tag(GRAPH_INITIALIZER) + _encode_varint(len(tensor))
        yield tensor
        run = after
    yield data[run:end]


def _tensor(
    data: mmap.mmap, start: int, end: int, spans: dict[str, tuple[int, int, int, list[int]]]
) -> bytes | None:
    """The tensor without its bytes, referring NOWHERE, where they are a large plain weight's
    ``raw_data`` NumPy can view as stored; else ``None`` (it is copied as it is)."""
    raw: list[tuple[int, int]] = []
    rest: list[bytes] = []
    for number, wire, tag, value, after in _fields(data, start, end):
        if number == TENSOR_RAW_DATA and wire == LENGTH_DELIMITED:
            raw.append((value, after))
        else:
            rest.append(data[tag:after])
    if len(raw) != 1 or raw[0][1] - raw[0][0] <= KEEP_BYTES:
        return None
    tensor = onnx.TensorProto.FromString(b"".join(rest))
    offset, length = raw[0][0], raw[0][1] - raw[0][0]
    dims = list(tensor.dims)
    count = math.prod(dims)
    dtype = MAPPED_TYPES.get(tensor.data_type)
    if (
        dtype is None
        or not tensor.name
        or tensor.name in spans
        or tensor.HasField("segment")
        or not only_raw_data(tensor)
        or tensor_bytes(tensor.data_type, count) != length
    ):
        return None
    refer_nowhere(tensor, length)
    spans[tensor.name] = (tensor.data_type, offset, count, dims)
    light: bytes = tensor.SerializeToString()
    return light
