"""The probe set behind the measured support matrix: one minimal one-node model per op × schema
version × input type, generated from the ONNX schemas installed here, never written by hand.

Shapes, attributes and constant inputs come from ONNX's own backend test cases for the op (the
generators ship inside the ``onnx`` wheel, so no test data is needed): the case's node is re-typed
to each allowed type of the op's first type constraint, its other inputs become initializers
(Reshape's shape, Resize's scales — what a parser needs as a build-time constant), and the model
is stamped with the schema's own ``since_version``. Where an older schema takes as an attribute
what the newer case passes as an input (Squeeze's axes before opset 13, Pad's pads before 11,
Slice's starts/ends before 10 …) the constant moves into the attribute. Every probe passes
``onnx.checker`` (full check) and strict shape inference; a cell no case yields a valid probe for
is listed as not probed, with the reason, rather than guessed."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, checker, defs, helper, numpy_helper, shape_inference

DOMAINS = ("", "ai.onnx.ml")  # what TensorRT's parser and ONNX Runtime's CPU provider read
PROBE_IR = 10  # ONNX Runtime 1.31 reads at most IR 13; onnx 1.23 writes 14 by default
ML_DEFAULT_OPSET = 17  # the default-domain opset an ai.onnx.ml probe also imports
PLAIN_NUMPY = tuple(np.dtype(c).type for c in "?bBhHiIlLqQefdgFD")  # what ORT's Python API takes
# Ops whose verdict depends on a second type as much as on the first input's, and where that
# type sits: Cast's ``to`` (None), else an input's index. TensorRT casts FLOAT16 to FLOAT but
# not to FLOAT8E5M2, quantizes to INT8 but not to INT16, raises float to an int32 power but not
# to a uint32 one.
PAIRED: dict[str, int | None] = {"Cast": None, "CastLike": 1, "Pow": 1, "QuantizeLinear": 2}


@dataclass(frozen=True)
class Cell:
    """One cell of the measured matrix: an op's schema version for one input type."""

    domain: str
    op: str
    since: int
    dtype: str  # ONNX's name for the element type of the op's first input: float, int64 …

    @property
    def key(self) -> str:
        return f"{self.domain or 'ai.onnx'}::{self.op}::{self.since}::{self.dtype}"

    @classmethod
    def from_key(cls, key: str) -> Cell:
        domain, op, since, dtype = key.split("::")
        return cls("" if domain == "ai.onnx" else domain, op, int(since), dtype)


@dataclass
class Probe:
    cell: Cell
    model: bytes  # the serialized one-node model
    feeds: dict[str, np.ndarray] = field(default_factory=dict)  # inputs ONNX Runtime can take
    seed: str = ""  # the backend test case it was made from
    runtime: bytes = b""  # the variant whose constant inputs are graph inputs (none: b"")
    signature: str = ""  # its node's attributes and optional inputs/outputs (``signature``)
    variant: bool = False  # an attribute variant of its cell, not the cell's own probe
    seeds: list[str] = field(default_factory=list)  # every case whose node has this signature

    @property
    def key(self) -> str:
        """The cell's key; an attribute variant's adds ``@`` and its signature."""
        return f"{self.cell.key}@{self.signature}" if self.variant else self.cell.key


# Attributes that carry a type (a paired cell's second type): not an attribute variant.
TYPE_ATTRIBUTES = ("to", "output_dtype")


# A list attribute whose every value is this says nothing beyond its absence; any other list
# (a kernel shape, an axes list) is named whatever it holds. All ones used to stand for every
# list: a 1-pixel pad (torchvision's MaxPool) read as no pad, and a 1×1 kernel as no kernel.
NEUTRAL_INTS = {"pads": 0, "strides": 1, "dilations": 1}


def signature(node: onnx.NodeProto, schema: defs.OpSchema) -> str:
    """What of a node beyond its op, version and types may change a parser's answer: each
    attribute set to other than its schema default (a string or int with its value — a mode,
    a flag —, a list by name unless it is neutral — pads of zeros, strides and dilations of
    ones —, anything else by name — a softcap), which inputs are given and how many outputs
    are asked for. Two nodes with one signature are asked the same question."""
    items = []
    for attribute in node.attribute:
        if attribute.name in TYPE_ATTRIBUTES:
            continue
        value = helper.get_attribute_value(attribute)
        formal = schema.attributes.get(attribute.name)
        default = formal.default_value if formal is not None else None
        if default is not None and default.type and helper.get_attribute_value(default) == value:
            continue
        kind = attribute.type
        if kind == onnx.AttributeProto.STRING:
            items.append(f"{attribute.name}={value.decode(errors='replace')}")
        elif kind == onnx.AttributeProto.INT:
            items.append(f"{attribute.name}={value}")
        elif kind == onnx.AttributeProto.INTS:
            neutral = NEUTRAL_INTS.get(attribute.name)  # pads of zeros, strides of ones …
            if neutral is None or any(v != neutral for v in value):
                items.append(attribute.name)
        else:
            items.append(attribute.name)
    given = ",".join(str(i) for i, name in enumerate(node.input) if name)
    outputs = sum(1 for name in node.output if name)
    return ";".join([*sorted(items), f"in={given}", f"out={outputs}"])


RUNTIME_MARK = ";rt"  # a non-primary input (axes, shape, sizes) is computed at run time
FOLDED_MARK = ";const"  # every input is a constant: the node computes a constant


def marks(node: onnx.NodeProto, schema: defs.OpSchema, constant: Any) -> str:
    """What a signature adds about where a node's inputs come from (``constant(name)`` says
    whether a tensor is known before the model runs): all constants, or a constant-typed
    input computed at run time — what a parser answers differently."""
    given = [name for name in node.input if name]
    if given and all(constant(name) for name in given):
        return FOLDED_MARK
    formals = schema.inputs
    if not formals:
        return ""
    primary = formals[0].type_str
    runtime = any(
        name and not constant(name) and formals[min(i, len(formals) - 1)].type_str != primary
        for i, name in enumerate(node.input)
    )
    return RUNTIME_MARK if runtime else ""


@dataclass
class ProbeSet:
    probes: list[Probe]
    unprobed: dict[str, str]  # cell key → why no valid probe could be made

    def by_key(self) -> dict[str, Probe]:
        return {p.cell.key: p for p in self.probes}


def _tensor_types(schema: defs.OpSchema, type_str: str) -> list[str]:
    """The element types a formal parameter allows (tensor types only: sequences, maps and
    optionals are not what a parser's cell is about)."""
    for constraint in schema.type_constraints:
        if constraint.type_param_str == type_str:
            allowed = constraint.allowed_type_strs
            return [t[len("tensor(") : -1] for t in allowed if t.startswith("tensor(")]
    return [type_str[len("tensor(") : -1]] if type_str.startswith("tensor(") else []


def _elem_type(name: str) -> int:
    value: int = TensorProto.DataType.Value(name.upper())
    return value


@lru_cache(maxsize=1)
def _seed_cases() -> dict[tuple[str, str], list[Any]]:
    """ONNX's backend test cases with one node and tensor data, by (domain, op)."""
    from onnx.backend.test.case import node as cases

    found: dict[tuple[str, str], list[Any]] = defaultdict(list)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # the generators' own overflow warnings
        every = cases.collect_testcases()
    for case in every:
        if case.model is None:  # a case that names a model file instead
            continue
        graph = case.model.graph
        if len(graph.node) != 1 or not case.data_sets:
            continue
        domain = graph.node[0].domain
        found[("" if domain == "ai.onnx" else domain, graph.node[0].op_type)].append(case)
    return dict(found)


VARIADIC = defs.OpSchema.FormalParameterOption.Variadic


def _array(value: Any) -> np.ndarray | None:
    """A backend case's input as an array (cases hold arrays, numpy scalars or TensorProtos);
    ``None`` for a sequence, map or optional."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return None


def _latest(domain: str, op: str) -> defs.OpSchema | None:
    try:
        return defs.get_schema(op, domain=domain)
    except defs.SchemaError:
        return None


def _as_attribute(array: np.ndarray, name: str, kind: Any) -> onnx.AttributeProto | None:
    """A constant input as the attribute an older schema took instead (ints, floats, int,
    float); ``None`` where the kinds do not fit."""
    types = defs.OpSchema.AttrType
    flat = array.reshape(-1).tolist()
    if kind == types.INTS:
        return helper.make_attribute(name, [int(v) for v in flat])
    if kind == types.FLOATS:
        return helper.make_attribute(name, [float(v) for v in flat])
    if kind in (types.INT, types.FLOAT) and len(flat) == 1:
        value = int(flat[0]) if kind == types.INT else float(flat[0])
        return helper.make_attribute(name, value)
    return None


def _probe(
    schema: defs.OpSchema, case: Any, dtype: str
) -> tuple[onnx.ModelProto, dict[str, np.ndarray], bytes] | str:
    """A valid one-node model for ``schema`` at ``dtype`` made from ``case`` (and its run-time
    variant), or why not."""
    graph = case.model.graph
    source = graph.node[0]
    latest = _latest(schema.domain, schema.name)
    formal_names = [p.name for p in latest.inputs] if latest else []
    primary = schema.inputs[0].type_str if schema.inputs else None
    attributes = {a.name: a for a in source.attribute}
    dtype, _, to = dtype.partition(">")  # a paired cell (Cast): from>to
    if to and schema.name == "Cast":
        attributes["to"] = helper.make_attribute("to", _elem_type(to))
    position = {value.name: i for i, value in enumerate(graph.input)}
    data = case.data_sets[0][0]
    inputs: list[onnx.ValueInfoProto] = []
    initializers: list[onnx.TensorProto] = []
    feeds: dict[str, np.ndarray] = {}
    constants: set[str] = set()  # the other inputs, given as initializers
    names: list[str] = []
    elem = _elem_type(dtype)
    variadic = bool(schema.inputs) and schema.inputs[-1].option == VARIADIC
    given = source.input[0] if source.input else ""
    first = _array(data[position[given]]) if given in position else None
    for i, name in enumerate(source.input):
        if not name:
            names.append("")
            continue
        array = _array(data[position[name]]) if name in position else None
        if array is None:
            return "the case's input is not a tensor"
        if i >= len(schema.inputs) and not variadic:
            formal = formal_names[i] if i < len(formal_names) else ""
            kind = schema.attributes[formal].type if formal in schema.attributes else None
            moved = _as_attribute(array, formal, kind) if kind is not None else None
            if moved is None:
                return f"input {i} has no place in opset {schema.since_version}"
            attributes[formal] = moved
            continue
        names.append(name)
        formal_param = schema.inputs[min(i, len(schema.inputs) - 1)]
        if formal_param.type_str == primary:
            inputs.append(helper.make_tensor_value_info(name, elem, list(array.shape)))
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if elem == TensorProto.STRING:
                    feeds[name] = array.astype(str).astype(object)
                else:
                    typed = array.astype(helper.tensor_dtype_to_np_dtype(elem))
                    if typed.dtype.type in PLAIN_NUMPY:  # ml_dtypes' bfloat16, float8 …: not
                        feeds[name] = typed  # arrays ONNX Runtime's Python API takes
        elif to and schema.name == "CastLike":  # the type donor, of the pair's second type
            initializers.append(_filler(name, to))
        elif to and i == PAIRED.get(schema.name):  # the input that carries the second type
            retyped = _retyped(array, name, to)
            if retyped is None:
                return f"no {to} tensor can hold the case's input {i}"
            initializers.append(retyped)
            constants.add(name)  # a model may give it at run time too (a zero point)
        elif _co_typed(array, first, dtype, schema, formal_param.type_str):
            retyped = _retyped(array, name, dtype)  # V beside Q, b beside a: one type, as in
            if retyped is None:  # the case (Q float16 with V float is no model anyone has)
                return f"no {dtype} tensor can hold the case's input {i}"
            initializers.append(retyped)
            constants.add(name)
        else:
            initializers.append(numpy_helper.from_array(array, name))
            constants.add(name)
    while names and not names[-1]:
        names.pop()
    where = PAIRED.get(schema.name)
    if to and where is not None and (where >= len(names) or not names[where]):
        return f"the case gives no input {where} to carry {to}"
    unknown = [a for a in attributes if a not in schema.attributes]
    if unknown:
        return f"attribute {unknown[0]} is not in opset {schema.since_version}"
    node = helper.make_node(schema.name, names, list(source.output), domain=schema.domain)
    node.attribute.extend(attributes.values())
    outputs = [onnx.ValueInfoProto(name=o) for o in source.output if o]
    opsets = [helper.make_opsetid(schema.domain, schema.since_version)]
    if schema.domain:
        opsets.append(helper.make_opsetid("", ML_DEFAULT_OPSET))
    model = helper.make_model(
        helper.make_graph([node], "probe", inputs, outputs, initializers),
        opset_imports=opsets,
        ir_version=PROBE_IR,
        producer_name="deploylens-probe",
    )
    try:
        model = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        if any(not o.type.tensor_type.elem_type for o in model.graph.output):
            return "shape inference left an output untyped"
        for output in model.graph.output:  # a data-dependent shape: the case's rank, unnamed
            if not output.type.tensor_type.HasField("shape"):
                rank = _rank(graph, output.name)
                dims = output.type.tensor_type.shape.dim
                for d in range(rank):
                    dims.add().dim_param = f"{output.name}_{d}"
                if rank == 0:
                    output.type.tensor_type.shape.SetInParent()
        checker.check_model(model, full_check=True)
    except Exception as exc:  # the checker's own reason is the cell's reason
        return str(exc).strip().splitlines()[0][:200]
    return model, feeds, _at_run_time(model, constants)


def _co_typed(
    array: np.ndarray, first: np.ndarray | None, dtype: str, schema: defs.OpSchema, type_str: str
) -> bool:
    """Whether an input of another type parameter moves with the first input's type: it had
    the first input's type in the case and its parameter allows the new one (Attention's V,
    QLinearMatMul's b, OneHot's values); a paired op's second type is its own."""
    if first is None or schema.name in PAIRED or array.dtype != first.dtype:
        return False
    return dtype in _tensor_types(schema, type_str)


def _at_run_time(model: onnx.ModelProto, constants: set[str]) -> bytes:
    """The same probe with its constant inputs (axes, shape, scales …) as graph inputs — what a
    model that computes them at run time gives the parser; ``b""`` when the op has none."""
    if not constants:
        return b""
    runtime = onnx.ModelProto()
    runtime.CopyFrom(model)
    moved = [t for t in runtime.graph.initializer if t.name in constants]
    kept = [t for t in runtime.graph.initializer if t.name not in constants]
    del runtime.graph.initializer[:]
    runtime.graph.initializer.extend(kept)
    for tensor in moved:
        runtime.graph.input.append(
            helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
        )
    serialized: bytes = runtime.SerializeToString()
    return serialized


def _rank(graph: onnx.GraphProto, name: str) -> int:
    for value in graph.output:
        if value.name == name:
            return len(value.type.tensor_type.shape.dim)
    return 0


def schemas(ops: set[str] | None = None) -> list[defs.OpSchema]:
    """Every non-deprecated schema version in the probed domains (``ops``: only these)."""
    return [
        s
        for s in defs.get_all_schemas_with_history()
        if s.domain in DOMAINS and not s.deprecated and (ops is None or s.name in ops)
    ]


def cells_of(schema: defs.OpSchema) -> list[Cell]:
    """One cell per type of the op's first input; a ``PAIRED`` op's cells pair it with the
    second type its verdict depends on."""
    primary = schema.inputs[0].type_str if schema.inputs else ""
    types = _tensor_types(schema, primary) if primary else ["none"]
    if schema.name in PAIRED and schema.domain == "":
        where = PAIRED[schema.name]
        second = (
            schema.outputs[0].type_str
            if where is None
            else schema.inputs[where].type_str
            if where < len(schema.inputs)
            else ""
        )
        if second and second != primary:
            targets = _tensor_types(schema, second)
            types = [f"{a}>{b}" for a in types for b in targets]
    return [Cell(schema.domain, schema.name, schema.since_version, t) for t in types]


def _retyped(array: np.ndarray, name: str, dtype: str) -> onnx.TensorProto | None:
    """The case's constant as a ``dtype`` tensor (float8 and 4-bit types through
    ``make_tensor``, which packs them); None where the values cannot be that type."""
    elem = _elem_type(dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if elem == TensorProto.STRING:
                text: Any = [str(v).encode() for v in array.ravel()]
                return helper.make_tensor(name, elem, list(array.shape), text)
            np_type = helper.tensor_dtype_to_np_dtype(elem)
            if np.dtype(np_type).type in PLAIN_NUMPY:
                return numpy_helper.from_array(array.astype(np_type), name)
            values = array.astype(np.float64).ravel().tolist()
            return helper.make_tensor(name, elem, list(array.shape), values)
    except Exception:
        return None


def _filler(name: str, dtype: str) -> onnx.TensorProto:
    elem = _elem_type(dtype)
    value: Any = b"0" if elem == TensorProto.STRING else (False if dtype == "bool" else 0)
    return helper.make_tensor(name, elem, [1], [value])


def generate(ops: set[str] | None = None, keys: set[str] | None = None) -> ProbeSet:
    """Probes for every cell (``ops``/``keys``: only those), each from the first backend case
    that makes a valid model for it; then, per op version, one attribute variant for every
    other signature the op's cases have, at one type (``_variants``)."""
    seeds = _seed_cases()
    probes: list[Probe] = []
    unprobed: dict[str, str] = {}
    for schema in schemas(ops):
        made_here: list[Probe] = []
        # a variant's key asked alone (a crash being cornered) still needs its cell's probe
        wanted = keys is None or any("@" in k and k.startswith(_family(schema)) for k in keys)
        for cell in cells_of(schema):
            if keys is not None and cell.key not in keys and not wanted:
                continue
            cases = seeds.get((cell.domain, cell.op), [])
            why = "no single-node backend test case for the op"
            for case in cases:
                made = _probe(schema, case, cell.dtype) if cell.dtype != "none" else "no inputs"
                if isinstance(made, str):
                    why = made
                    continue
                model, feeds, runtime = made
                mark = signature(model.graph.node[0], schema)
                made_here.append(Probe(cell, model.SerializeToString(), feeds, case.name,
                                       runtime, mark, seeds=[case.name]))  # fmt: skip
                break
            else:
                if keys is None or cell.key in keys:
                    unprobed[cell.key] = why
        probes += [p for p in made_here if keys is None or p.cell.key in keys]
        if made_here and wanted:
            variants = _variants(schema, made_here, seeds.get((schema.domain, schema.name), []))
            probes += [v for v in variants if keys is None or v.key in keys]
            taken = {p.key for p in made_here} | {v.key for v in variants}
            probes += [f for f in _form_probes(schema, made_here, taken)
                       if keys is None or f.key in keys]  # fmt: skip
    return ProbeSet(probes, unprobed)


def _form_probes(schema: defs.OpSchema, made: list[Probe], taken: set[str]) -> list[Probe]:
    """A variant for each form real exporters write of this op version (``forms.py``) whose
    signature no backend case asked: its key is the cell of its first input's type."""
    from deploylens.core.support.forms import bundled_forms, probe_model

    cells = {p.cell.dtype: p.cell for p in made if not p.variant}
    found: dict[str, Probe] = {}
    for form in bundled_forms():
        if form.op != schema.name or form.domain != schema.domain:
            continue
        try:
            since = defs.get_schema(form.op, form.opset, form.domain).since_version
        except defs.SchemaError:
            continue
        first = next((i for i in form.inputs if i.given), None)
        dtype = _type_name(first.elem) if first is not None else "none"
        cell = cells.get(dtype)
        if since != schema.since_version or cell is None:
            continue
        model, feeds = probe_model(form, PROBE_IR)
        try:
            model = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
            checker.check_model(model, full_check=True)
        except Exception:  # a form this onnx cannot check as one node: not a probe
            continue
        node = model.graph.node[0]
        constants = {t.name for t in model.graph.initializer}
        mark = signature(node, schema) + marks(node, schema, constants.__contains__)
        key = f"{cell.key}@{mark}"
        if key in taken or mark == next((p.signature for p in made if p.cell == cell), None):
            continue
        if key in found:
            found[key].seeds.extend(s for s in form.sources if s not in found[key].seeds)
            continue
        usable = {k: v for k, v in feeds.items() if v.dtype.type in PLAIN_NUMPY}
        found[key] = Probe(cell, model.SerializeToString(), usable,
                           f"exporter form: {form.sources[0]}", signature=mark, variant=True,
                           seeds=list(form.sources))  # fmt: skip
    return list(found.values())


def _type_name(elem: int) -> str:
    return str(TensorProto.DataType.Name(elem)).lower()


def _family(schema: defs.OpSchema) -> str:
    return f"{schema.domain or 'ai.onnx'}::{schema.name}::{schema.since_version}::"


# Types an attribute variant is probed at, one per class: attributes and types interact by
# class (Mod without fmod fails on float and runs on int64), and asking every variant of every
# type would multiply the probe set by ten.
TYPE_CLASSES = {
    "float": ("float", "float16", "bfloat16", "double"),
    "int": ("int64", "int32", "int8", "uint8", "int16", "uint16", "uint32", "uint64"),
    "string": ("string",),
    "bool": ("bool",),
}


def type_class(dtype: str) -> str:
    """The class of a cell's type whose variants answer for it ("" for none: float8 types
    and a paired cell's types keep their own cell's answer)."""
    return next((name for name, members in TYPE_CLASSES.items() if dtype in members), "")


def _variants(schema: defs.OpSchema, made: list[Probe], cases: list[Any]) -> list[Probe]:
    """One probe per other signature among the op's cases (Attention with a softcap, MaxPool
    with dilations, ScatterND with a reduction), at one type of each class the op takes (float
    first, int64 first): attributes are asked once per class, not once per type. Each lists
    the cases it stands for (a benchmark on those cases leaves its own case's variant out).
    A paired op (Cast) has none: its second type is what its answer hangs on."""
    if schema.name in PAIRED:
        return []
    probed = {p.cell.dtype: p for p in made}
    out: list[Probe] = []
    for members in TYPE_CLASSES.values():
        base = next((probed[t] for t in members if t in probed), None)
        if base is not None:
            out += _class_variants(schema, base, cases)
    return out


def _class_variants(schema: defs.OpSchema, base: Probe, cases: list[Any]) -> list[Probe]:
    found: dict[str, Probe] = {base.signature: base}
    for case in cases:
        try:
            attempt = _probe(schema, case, base.cell.dtype)
        except ValueError:  # a case whose empty constant no attribute can hold (Squeeze's axes)
            continue
        if isinstance(attempt, str):
            continue
        model, feeds, runtime = attempt
        mark = signature(model.graph.node[0], schema)
        if mark in found:
            if case.name not in found[mark].seeds:
                found[mark].seeds.append(case.name)
            continue
        found[mark] = Probe(base.cell, model.SerializeToString(), feeds, case.name, runtime,
                            signature=mark, variant=True, seeds=[case.name])  # fmt: skip
    return [p for p in found.values() if p.variant]
