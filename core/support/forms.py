"""The node forms real exporters write, as probes of the measured matrix.

ONNX's backend test cases ask an op the way its spec's examples do: LayerNormalization with its
three outputs, MaxPool with one attribute at a time, Resize with constant scales. Exporters
write other forms — a one-output LayerNormalization, MaxPool with kernel, strides and pads
together, Resize whose sizes are computed at run time, ConstantOfShape of a constant — and a
cell measured on the spec's form was applied to them (every LayerNormalization of a dynamo
export was "blocked" while TensorRT-RTX parses the model).

A form is one node as an exported model has it: op, opset, attributes, each input's type and
static shape, which inputs are constants (small ones with their values), and how many outputs
it asks for. ``resources/support/exporter_forms.json`` holds the forms harvested from exports
of common models (``bench/harvest_forms.py``); ``probes.generate`` makes each into a one-node
probe, keyed by its signature, so a node is judged by the form it has.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

SMALL = 256  # constants up to this many elements keep their values (shapes, axes, scales)
FOLDED = ";const"  # a signature's mark for a node whose every input is a constant


@dataclass
class FormInput:
    elem: int  # ONNX element type
    shape: list[int]
    const: str = ""  # a small constant's TensorProto, base64; "" for a run-time input
    weight: bool = False  # a constant too large to keep: random values of its shape
    given: bool = True  # False: an optional input the node leaves out
    seen: str = ""  # a small run-time integer input: the value it had (TensorProto, base64)


@dataclass
class NodeForm:
    op: str
    domain: str
    opset: int  # the model's opset for the node's domain
    attributes: list[str]  # each AttributeProto, base64
    inputs: list[FormInput]
    outputs: int
    sources: list[str] = field(default_factory=list)  # "torchvision:resnet18 (dynamo)" …

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op, "domain": self.domain, "opset": self.opset,
            "attributes": self.attributes, "outputs": self.outputs, "sources": self.sources,
            "inputs": [vars(i) for i in self.inputs],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeForm:
        inputs = [FormInput(**i) for i in data["inputs"]]
        return cls(data["op"], data["domain"], int(data["opset"]), list(data["attributes"]),
                   inputs, int(data["outputs"]), list(data.get("sources", [])))  # fmt: skip

    def node(self) -> onnx.NodeProto:
        names = [f"x{i}" if given.given else "" for i, given in enumerate(self.inputs)]
        while names and not names[-1]:
            names.pop()
        node = helper.make_node(
            self.op, names, [f"y{i}" for i in range(self.outputs)], domain=self.domain
        )
        for text in self.attributes:
            attribute = onnx.AttributeProto()
            attribute.ParseFromString(base64.b64decode(text))
            node.attribute.append(attribute)
        return node

    def folded(self) -> bool:
        """Every given input is a constant: the node computes a constant."""
        given = [i for i in self.inputs if i.given]
        return bool(given) and all(i.const or i.weight for i in given)


def node_forms(
    model: onnx.ModelProto, source: str, seen: dict[str, np.ndarray] | None = None
) -> list[NodeForm]:
    """The forms of a model's top-level nodes (its shapes from ONNX's inference; a node with an
    input of unknown shape or type is left out: no probe could be made of it). ``seen``: the
    values small integer tensors had when the model ran (a shape computed at run time)."""
    seen = seen or {}
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    graph = inferred.graph
    types: dict[str, tuple[int, list[int] | None]] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        known = tensor.HasField("shape") and all(d > 0 or d == 0 for d in dims)
        types[value.name] = (tensor.elem_type, dims if known else None)
    constants: dict[str, np.ndarray] = {}
    for tensor in graph.initializer:
        constants[tensor.name] = numpy_helper.to_array(tensor)
        types[tensor.name] = (tensor.data_type, list(tensor.dims))
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].HasField("t"):
            value = numpy_helper.to_array(node.attribute[0].t)
            constants[node.output[0]] = value
            types[node.output[0]] = (node.attribute[0].t.data_type, list(value.shape))
    opsets = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
    forms = []
    for node in graph.node:
        if node.op_type == "Constant" or any(a.type == onnx.AttributeProto.GRAPH
                                             for a in node.attribute):  # fmt: skip
            continue
        inputs = []
        for name in node.input:
            if not name:
                inputs.append(FormInput(0, [], given=False))
                continue
            elem, shape = types.get(name, (0, None))
            if not elem or shape is None:
                break
            value = constants.get(name)
            if value is not None and value.size <= SMALL:
                tensor = numpy_helper.from_array(value)
                inputs.append(FormInput(elem, shape, base64.b64encode(
                    tensor.SerializeToString()).decode()))  # fmt: skip
            elif value is not None:
                inputs.append(FormInput(elem, shape, weight=True))
            else:
                observed = seen.get(name)
                kept = "" if observed is None else base64.b64encode(
                    numpy_helper.from_array(observed).SerializeToString()).decode()  # fmt: skip
                inputs.append(FormInput(elem, shape, seen=kept))
        else:
            attributes = [base64.b64encode(a.SerializeToString()).decode() for a in node.attribute]
            domain = "" if node.domain == "ai.onnx" else node.domain
            forms.append(NodeForm(node.op_type, domain, opsets.get(domain, 1), attributes,
                                  inputs, sum(1 for o in node.output if o), [source]))  # fmt: skip
    return forms


def probe_model(form: NodeForm, ir_version: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A one-node model of the form: run-time inputs as graph inputs (their feeds random but
    in a range a shape or index input accepts), constants as initializers."""
    rng = np.random.default_rng(0)
    node = form.node()
    inputs, initializers, feeds = [], [], {}
    for i, given in enumerate(form.inputs):
        if not given.given:
            continue
        name = f"x{i}"
        if given.const:
            tensor = onnx.TensorProto()
            tensor.ParseFromString(base64.b64decode(given.const))
            tensor.name = name
            initializers.append(tensor)
            continue
        array = _random(given.elem, given.shape, rng)
        if given.seen:  # what the exported model computed here: a valid shape, axes, size
            tensor = onnx.TensorProto()
            tensor.ParseFromString(base64.b64decode(given.seen))
            array = numpy_helper.to_array(tensor)
        if given.weight:
            initializers.append(numpy_helper.from_array(array, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, given.elem, given.shape))
            feeds[name] = array
    outputs = [onnx.ValueInfoProto(name=o) for o in node.output]
    opsets = [helper.make_opsetid(form.domain, form.opset)]
    if form.domain:
        opsets.append(helper.make_opsetid("", 17))
    model = helper.make_model(
        helper.make_graph([node], "form", inputs, outputs, initializers),
        opset_imports=opsets, ir_version=ir_version, producer_name="deploylens-form",
    )  # fmt: skip
    return model, feeds


def _random(elem: int, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 2, shape).astype(dtype)  # indices, shapes' worth of small values


@lru_cache(maxsize=1)
def bundled_forms() -> tuple[NodeForm, ...]:
    """The forms harvested from exports of common models (``bench/harvest_forms.py``)."""
    path = files("deploylens.resources") / "support" / "exporter_forms.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(NodeForm.from_dict(item) for item in data.get("forms", []))


def form_key(form: NodeForm) -> tuple[str, str, int, tuple[str, ...], int, tuple[Any, ...]]:
    """Two forms with one key make the same probe (sources are merged)."""
    inputs = tuple((i.elem, i.given, i.const, i.weight, bool(i.seen)) for i in form.inputs)
    return (form.op, form.domain, form.opset, tuple(form.attributes), form.outputs, inputs)
