"""What is inside an ONNX model, computed from the protobuf alone (weights are never read)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import onnx

from deploylens.core.errors import ModelLoadError
from deploylens.core.model.dtypes import element_type_name, tensor_bytes
from deploylens.core.model.external_data import (
    ExternalDataFile,
    external_tensor_span,
    scan_external_data,
    tensor_is_external,
)
from deploylens.core.model.isolated import Crashed, run_isolated
from deploylens.core.model.loading import read_model
from deploylens.core.model.walk import iter_subgraphs
from deploylens.core.model.weightless import without_weight_data
from deploylens.core.results import Evidence, Result, Verdict, judged

SUMMARY_SCHEMA = 1
_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


@dataclass
class ValueSpec:
    """A graph input or output: name, element type and (symbolic) shape."""

    name: str
    type: str
    dtype: str | None
    shape: list[int | str | None] | None


@dataclass
class OpCount:
    domain: str
    op_type: str
    count: int


@dataclass
class FunctionSpec:
    domain: str
    name: str
    nodes: int


@dataclass
class ModelSummary(Result):
    """The ``model.inspect`` job's typed result (and ``deploylens inspect``'s, read here)."""

    path: str
    file_bytes: int
    graph_name: str
    producer_name: str
    producer_version: str
    ir_version: int
    model_version: int
    domain: str
    doc_string: str
    opset_imports: dict[str, int]
    inputs: list[ValueSpec]
    outputs: list[ValueSpec]
    node_count: int
    subgraph_node_count: int
    op_counts: list[OpCount]
    initializer_count: int
    initializer_bytes: int
    initializer_inputs: int
    external_data: list[ExternalDataFile]
    functions: list[FunctionSpec]
    subgraph_count: int
    metadata: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    schema: int = SUMMARY_SCHEMA

    def verdict(self) -> Verdict:
        """A file with problems (unreadable external data, an invalid graph) fails."""
        evidence = Evidence(1, "file(s) read whole (graph, types, external data)")
        if self.problems:
            return judged(evidence, self.problems[0], "fail")
        return judged(evidence, "readable", "pass")


def describe_type(
    type_proto: onnx.TypeProto,
) -> tuple[str, str | None, list[int | str | None] | None]:
    """(type text, element type, shape) for any ONNX type: tensors, sequences, maps, optionals."""
    which = type_proto.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        tensor = getattr(type_proto, which)
        dtype = element_type_name(tensor.elem_type)
        shape: list[int | str | None] | None = None
        if tensor.HasField("shape"):
            shape = []
            for dim in tensor.shape.dim:
                kind = dim.WhichOneof("value")
                shape.append(
                    dim.dim_value if kind == "dim_value" else dim.dim_param if kind else None
                )
        prefix = "sparse_tensor" if which == "sparse_tensor_type" else "tensor"
        return f"{prefix}({dtype})", dtype, shape
    if which == "sequence_type":
        inner = describe_type(type_proto.sequence_type.elem_type)[0]
        return f"seq({inner})", None, None
    if which == "optional_type":
        inner = describe_type(type_proto.optional_type.elem_type)[0]
        return f"optional({inner})", None, None
    if which == "map_type":
        key = element_type_name(type_proto.map_type.key_type)
        value = describe_type(type_proto.map_type.value_type)[0]
        return f"map({key}, {value})", None, None
    return "unknown", None, None


def _value_spec(value: onnx.ValueInfoProto) -> ValueSpec:
    text, dtype, shape = describe_type(value.type)
    return ValueSpec(name=value.name, type=text, dtype=dtype, shape=shape)


def _initializer_bytes(tensor: onnx.TensorProto) -> int:
    if tensor_is_external(tensor):
        try:
            return external_tensor_span(tensor)[2]
        except ModelLoadError:  # reported as the external data file's problem
            return 0
    size = tensor_bytes(tensor.data_type, math.prod(tensor.dims))
    if size is None:  # strings: their own lengths
        return sum(len(item) for item in tensor.string_data)
    return size


MAX_FINDINGS = 50


def checker_findings(model: onnx.ModelProto) -> list[str]:
    """Everything the ONNX checker and strict shape inference object to, one line each: the
    checker stops at its first error, strict inference lists every node it cannot type (five
    more on Polygraphy's bad_graph example). Models that fail still open. Both run in a forked
    child: onnx aborts the interpreter on some malformed models."""
    return _checked(model).findings


class Checked(NamedTuple):
    """What the checker and strict shape inference said of a model."""

    findings: list[str]
    crashed: bool  # the checker or inference took its forked process down
    # with ``keep_shapes``, when strict inference went through: a serialized GraphProto holding
    # only the inferred graph's inputs, outputs and value_info (the shapes job reads them
    # instead of inferring a second time: ~0.4 s of CPU on 100k nodes)
    shapes: bytes | None = None


def _checked(model: onnx.ModelProto, keep_shapes: bool = False) -> Checked:
    found = run_isolated(_checker_findings, model, keep_shapes)
    if isinstance(found, Crashed):
        return Checked(
            [
                f"onnx's checker/shape inference crashed on this model ({found.reason}): it is "
                "malformed (dims, attributes or types no exporter writes)"
            ],
            True,
        )
    return Checked(found[0], False, found[1])


def _checker_findings(
    model: onnx.ModelProto, keep_shapes: bool = False
) -> tuple[list[str], bytes | None]:
    model = without_weight_data(model)  # neither reads weights; copying them cost 3x polygraphy
    found: list[str] = []
    try:
        onnx.checker.check_model(model, full_check=False)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        found.append(f"onnx.checker: {first}")
    except Exception as exc:  # the checker itself can fail on odd models
        found.append(f"onnx.checker could not run: {type(exc).__name__}: {str(exc)[:200]}")
    shapes = None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        if keep_shapes:
            shapes = _declared_values(inferred.graph)
    except Exception as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        if lines:
            lines[0] = lines[0].removeprefix("[ShapeInferenceError] Inference error(s): ")
        found.extend(f"shape inference: {line[:300]}" for line in lines[:MAX_FINDINGS])
    return found, shapes


def _declared_values(graph: onnx.GraphProto) -> bytes:
    """The graph's typed values alone (inputs, outputs, value_info), serialized."""
    values = onnx.GraphProto()
    values.input.extend(graph.input)
    values.output.extend(graph.output)
    values.value_info.extend(graph.value_info)
    data: bytes = values.SerializeToString()
    return data


def _subgraphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    subgraphs = list(iter_subgraphs(model.graph.node))
    for function in model.functions:
        subgraphs.extend(iter_subgraphs(function.node))
    return subgraphs


def model_findings(model: onnx.ModelProto, keep_shapes: bool = False) -> Checked:
    """What ``summarize(check=True)`` adds to the summary's warnings, and whether the checker
    crashed its (forked) process: a model with external data is not checked. One rule for
    ``inspect`` and for the GUI, which opens a model unchecked and asks the shapes job for these
    after its graph is painted (``keep_shapes``: with strict inference's shapes)."""
    tensors = [*model.graph.initializer]
    for sub in _subgraphs(model):
        tensors.extend(sub.initializer)
    if any(tensor_is_external(tensor) for tensor in tensors):
        return Checked([], False)
    return _checked(model, keep_shapes)


def summarize(model: onnx.ModelProto, path: str | Path, check: bool = True) -> ModelSummary:
    """Summarize a parsed model; ``path`` locates its external data files."""
    path = Path(path)
    graph = model.graph
    subgraphs = _subgraphs(model)
    ops: Counter[tuple[str, str]] = Counter(
        (node.domain or "ai.onnx", node.op_type) for node in graph.node
    )
    for sub in subgraphs:
        ops.update((node.domain or "ai.onnx", node.op_type) for node in sub.node)
    initializers = list(graph.initializer)
    for sub in subgraphs:
        initializers.extend(sub.initializer)
    initializer_names = {tensor.name for tensor in graph.initializer}
    graph_inputs = [value for value in graph.input if value.name not in initializer_names]
    opsets = {(entry.domain or "ai.onnx"): entry.version for entry in model.opset_import}
    warnings: list[str] = []
    problems: list[str] = []
    if not model.opset_import:
        warnings.append("the model declares no opset imports (onnx requires at least one)")
    external = scan_external_data(initializers, path.parent)
    problems.extend(f.problem for f in external if f.problem)
    if check:
        warnings.extend(model_findings(model).findings)
    return ModelSummary(
        path=str(path),
        file_bytes=path.stat().st_size if path.exists() else 0,
        graph_name=graph.name,
        producer_name=model.producer_name,
        producer_version=model.producer_version,
        ir_version=model.ir_version,
        model_version=model.model_version,
        domain=model.domain,
        doc_string=model.doc_string[:2000],
        opset_imports=opsets,
        inputs=[_value_spec(value) for value in graph_inputs],
        outputs=[_value_spec(value) for value in graph.output],
        node_count=len(graph.node),
        subgraph_node_count=sum(len(sub.node) for sub in subgraphs),
        op_counts=[
            OpCount(domain, op_type, count)
            for (domain, op_type), count in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        initializer_count=len(initializers),
        initializer_bytes=sum(_initializer_bytes(tensor) for tensor in initializers),
        initializer_inputs=len(graph.input) - len(graph_inputs),
        external_data=external,
        functions=[FunctionSpec(f.domain, f.name, len(f.node)) for f in model.functions],
        subgraph_count=len(subgraphs),
        metadata={entry.key: entry.value for entry in model.metadata_props},
        warnings=warnings,
        problems=problems,
    )


def inspect_model(path: str | Path, check: bool = True) -> ModelSummary:
    """Open ``path`` without its weights and summarize it (raises ``ModelLoadError``)."""
    return summarize(read_model(path), path, check=check)


def model_inputs(model: str) -> dict[str, list[Any]]:
    """``{input: dims}`` with ints for fixed dims and names for symbolic ones (weights stay on
    disk; initializers listed as inputs are not inputs): what build settings are checked
    against."""
    graph = read_model(model).graph
    initializers = {i.name for i in graph.initializer}
    return {
        v.name: describe_type(v.type)[2] or [] for v in graph.input if v.name not in initializers
    }
