"""Layer-wise sessions that share one copy of the weights. Each chunk of probes is a session over
the model with other outputs; serializing the whole model for it (and ONNX Runtime parsing the
bytes back) cost vit_b_16 ~4 s of CPU per session, most of it copying 346 MB of weights. Here
the model is copied once without the bytes of its large weights (their initializers become
external-data references to nowhere) and every session is handed the weights as OrtValues over
one set of arrays (``add_external_initializers``), so a session costs what its graph costs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from deploylens.core.model.dtypes import tensor_bytes
from deploylens.core.model.mapped_weights import MAPPED_TYPES
from deploylens.core.model.weightless import KEEP_BYTES, only_raw_data, refer_nowhere

# Element types numpy and OrtValue hold natively (the mapped reader's, one list); any other
# (bfloat16, float8, int4, strings) stays inline in the model, as before.
SHARED_TYPES = frozenset(MAPPED_TYPES)


@dataclass
class SharedWeights:
    """``light``: the model with its large weights as references; ``names``/``values``: those
    weights as OrtValues over ``arrays`` (which must outlive every session made from them)."""

    light: onnx.ModelProto
    names: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    arrays: list[np.ndarray] = field(default_factory=list)

    def model_with_outputs(self, outputs: list[str]) -> bytes:
        """The light model with exactly these graph outputs, serialized (kilobytes, not the
        weights): ONNX Runtime prunes the nodes only other tensors need."""
        declared = {o.name: o for o in self.light.graph.output}
        kept = [onnx.ValueInfoProto() for _ in outputs]
        for info, name in zip(kept, outputs, strict=True):
            info.CopyFrom(declared.get(name) or onnx.ValueInfoProto(name=name))
        original = [onnx.ValueInfoProto() for _ in self.light.graph.output]
        for copy, info in zip(original, self.light.graph.output, strict=True):
            copy.CopyFrom(info)  # copies: the repeated field's own items go with the del
        del self.light.graph.output[:]
        self.light.graph.output.extend(kept)
        try:
            data: bytes = self.light.SerializeToString()
        finally:
            del self.light.graph.output[:]
            self.light.graph.output.extend(original)
        return data

    def share(self, name: str, array: np.ndarray) -> None:
        """Hand ``array`` to every session as the weight ``name`` (the light model refers
        NOWHERE for it)."""
        import onnxruntime as ort

        self.arrays.append(array)
        self.names.append(name)
        self.values.append(ort.OrtValue.ortvalue_from_numpy(array))

    def add_to(self, options: Any) -> Any:
        """``options`` (an ``ort.SessionOptions``) that hand the session the shared weights."""
        if self.names:
            options.add_external_initializers(self.names, self.values)
        return options


def share_weights(
    model: onnx.ModelProto, mapped: dict[str, np.ndarray] | None = None
) -> SharedWeights:
    """One copy of ``model`` without its large main-graph weights' bytes, and those weights.
    ``mapped``: weights ``model`` already refers NOWHERE for, by name (``read_mapped``'s
    arrays over the file), shared as they are."""
    from onnx import numpy_helper

    mapped = mapped or {}
    light = onnx.ModelProto()
    _copy_fields(model, light, skip="graph")
    _copy_fields(model.graph, light.graph, skip="initializer")
    shared = SharedWeights(light)
    for tensor in model.graph.initializer:
        kept = light.graph.initializer.add()
        if tensor.name in mapped:
            kept.CopyFrom(tensor)  # its bytes are the mapped array's: it refers NOWHERE
            shared.share(tensor.name, mapped[tensor.name])
            continue
        if not _shareable(tensor):
            kept.CopyFrom(tensor)
            continue
        try:
            array = numpy_helper.to_array(tensor)
        except ValueError:  # bytes that do not fit the dims: ONNX Runtime says so, as before
            kept.CopyFrom(tensor)
            continue
        kept.name, kept.data_type = tensor.name, tensor.data_type
        kept.dims.extend(tensor.dims)
        refer_nowhere(kept, array.nbytes)
        shared.share(tensor.name, array)
    return shared


def _shareable(tensor: onnx.TensorProto) -> bool:
    """A large tensor of a plain type stored as ``raw_data`` (a tensor with typed fields has
    none); any other stays inline."""
    if tensor.data_type not in SHARED_TYPES or tensor.HasField("segment"):
        return False
    if not only_raw_data(tensor):
        return False
    size = tensor_bytes(tensor.data_type, math.prod(tensor.dims)) or 0
    # the size from the dims: reading raw_data to measure it would copy the bytes
    return size > KEEP_BYTES and tensor.HasField("raw_data")


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    """Every set field of ``source`` but ``skip`` into ``target`` (whatever fields a newer onnx
    adds come along)."""
    for descriptor, value in source.ListFields():
        if descriptor.name == skip:
            continue
        repeated = (
            descriptor.is_repeated
            if hasattr(descriptor, "is_repeated")
            else descriptor.label == descriptor.LABEL_REPEATED
        )
        if repeated:
            getattr(target, descriptor.name).extend(value)
        elif descriptor.message_type is not None:
            getattr(target, descriptor.name).CopyFrom(value)
        else:
            setattr(target, descriptor.name, value)
