"""Columnar graph IR built from an ONNX graph without touching weights.

Nodes are rows of NumPy arrays (ids into one string table); graph inputs and outputs are pseudo
nodes so the view can draw them; edges run producer → consumer with the tensor's name. Subgraphs
(If/Loop/Scan bodies) and local functions are kept as protos and become an IR of their own when
the user enters them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import onnx

from deploylens.core.graph.hierarchy import (
    NAME_SCOPES_KEY,
    GroupTree,
    build_group_tree,
    parse_name_scopes,
    path_from_node_name,
)
from deploylens.core.graph.strings import StringTable
from deploylens.core.model.dtypes import element_type_name
from deploylens.core.model.summary import describe_type

OP, GRAPH_INPUT, GRAPH_OUTPUT, OUTER_VALUE = 0, 1, 2, 3
KIND_NAMES = {OP: "op", GRAPH_INPUT: "input", GRAPH_OUTPUT: "output", OUTER_VALUE: "outer"}
FunctionKey = tuple[str, str]
CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})


@dataclass
class GraphIR:
    title: str
    proto: onnx.GraphProto | onnx.FunctionProto
    strings: StringTable
    kind: np.ndarray  # int8 [N]
    name: np.ndarray  # int32 [N] display name
    op: np.ndarray  # int32 [N]
    domain: np.ndarray  # int32 [N]
    proto_index: np.ndarray  # int32 [N], -1 for pseudo nodes
    edge_src: np.ndarray  # int32 [E]
    edge_dst: np.ndarray  # int32 [E]
    edge_tensor: np.ndarray  # int32 [E]
    groups: GroupTree
    hierarchy: str  # "name_scopes" | "node_names" | "flat"
    subgraphs: dict[int, list[tuple[str, onnx.GraphProto]]] = field(default_factory=dict)
    functions: dict[FunctionKey, onnx.FunctionProto] = field(default_factory=dict)
    value_types: dict[str, tuple[str, list[int | str | None] | None]] = field(default_factory=dict)
    initializers: dict[str, onnx.TensorProto] = field(default_factory=dict)
    # weights made by a node that only passes an initializer on (Identity) or holds one
    # (Constant): tensor → that node's index in the proto. Drawn inside their consumer as
    # Netron does, not as boxes in rows (MobileNetV2 had 39 Identity boxes in one row).
    folded: dict[str, int] = field(default_factory=dict)

    @property
    def node_count(self) -> int:
        return len(self.kind)

    @property
    def op_count(self) -> int:
        return int(np.count_nonzero(self.kind == OP))

    def label(self, node: int) -> str:
        return self.strings[int(self.name[node])]

    def op_type(self, node: int) -> str:
        return self.strings[int(self.op[node])]

    def node_proto(self, node: int) -> onnx.NodeProto | None:
        index = int(self.proto_index[node])
        return self.proto.node[index] if index >= 0 else None

    def function_for(self, node: int) -> onnx.FunctionProto | None:
        key = (self.strings[int(self.domain[node])], self.op_type(node))
        return self.functions.get(key)

    @cached_property
    def successors(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (offsets, targets) of out-edges."""
        return _csr(self.edge_src, self.edge_dst, self.node_count)

    @cached_property
    def predecessors(self) -> tuple[np.ndarray, np.ndarray]:
        return _csr(self.edge_dst, self.edge_src, self.node_count)

    def reachable(self, start: int, downstream: bool) -> np.ndarray:
        """Nodes reachable from ``start`` (itself included), breadth first over NumPy frontiers."""
        offsets, targets = self.successors if downstream else self.predecessors
        seen = np.zeros(self.node_count, dtype=bool)
        seen[start] = True
        frontier = np.array([start])
        while frontier.size:
            starts, ends = offsets[frontier], offsets[frontier + 1]
            lengths = ends - starts
            if not lengths.sum():
                break
            idx = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
                lengths.sum()
            )
            nxt = np.unique(targets[idx])
            nxt = nxt[~seen[nxt]]
            seen[nxt] = True
            frontier = nxt
        return np.flatnonzero(seen)


def _csr(keys: np.ndarray, values: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=count), out=offsets[1:])
    return offsets, values[order]


def _hierarchy_paths(nodes: list[onnx.NodeProto]) -> tuple[str, list[tuple[str, ...]]]:
    scoped: list[tuple[str, ...]] = []
    found_scopes = any(
        prop.key == NAME_SCOPES_KEY for node in nodes[:64] for prop in node.metadata_props
    )
    for node in nodes if found_scopes else ():
        path: tuple[str, ...] = ()
        for prop in node.metadata_props:
            if prop.key == NAME_SCOPES_KEY:
                path = parse_name_scopes(prop.value)
                found_scopes = True
                break
        scoped.append(path)
    if found_scopes:
        return "name_scopes", scoped
    cache: dict[str, tuple[str, ...]] = {}
    named = []
    for node in nodes:
        prefix = node.name.rpartition("/")[0]
        found = cache.get(prefix)
        if found is None:
            found = cache[prefix] = path_from_node_name(node.name)
        named.append(found)
    if nodes and sum(1 for path in named if path) >= 0.5 * len(nodes):
        return "node_names", named
    return "flat", [() for _ in nodes]


def build_ir(
    graph: onnx.GraphProto | onnx.FunctionProto,
    functions: dict[FunctionKey, onnx.FunctionProto] | None = None,
    title: str = "",
) -> GraphIR:
    """IR of a graph or a function body; values from an outer scope become ``outer`` nodes."""
    strings = StringTable()
    nodes = list(graph.node)
    is_function = isinstance(graph, onnx.FunctionProto)
    initializers = {} if is_function else {t.name: t for t in graph.initializer}
    if is_function:
        inputs = [name for name in graph.input]
        outputs = [name for name in graph.output]
        value_types: dict[str, tuple[str, list[int | str | None] | None]] = {}
    else:
        inputs = [v.name for v in graph.input if v.name not in initializers]
        outputs = [v.name for v in graph.output]
        value_types = {}
        for value in (*graph.input, *graph.output, *graph.value_info):
            _, dtype, shape = describe_type(value.type)
            value_types[value.name] = (dtype or "?", shape)
        for initializer in initializers.values():
            value_types.setdefault(
                initializer.name,
                (element_type_name(initializer.data_type), list(initializer.dims)),
            )
    hierarchy, paths = _hierarchy_paths(nodes)
    folded = {} if is_function else weight_nodes(nodes, initializers, set(outputs))
    skipped = set(folded.values())
    kind: list[int] = []
    names: list[int] = []
    ops: list[int] = []
    domains: list[int] = []
    proto_index: list[int] = []
    group_paths: list[tuple[str, ...]] = []
    producer: dict[str, int] = {}
    empty = strings.intern("")

    def add(
        node_kind: int, label: str, op: str, domain: int, index: int, path: tuple[str, ...]
    ) -> int:
        kind.append(node_kind)
        names.append(strings.intern(label))
        ops.append(strings.intern(op))
        domains.append(domain)
        proto_index.append(index)
        group_paths.append(path)
        return len(kind) - 1

    for name in inputs:
        producer[name] = add(GRAPH_INPUT, name, "Input", empty, -1, ())
    subgraphs: dict[int, list[tuple[str, onnx.GraphProto]]] = {}
    src: list[int] = []
    dst: list[int] = []
    tensor: list[int] = []
    pending: list[tuple[int, str]] = []
    intern = strings.intern
    for index, node in enumerate(nodes):
        if index in skipped:
            continue
        op_type = node.op_type
        domain = node.domain
        me = len(kind)
        kind.append(OP)
        names.append(intern(node.name or f"{op_type}_{index}"))
        ops.append(intern(op_type))
        domains.append(intern(domain or "ai.onnx"))
        proto_index.append(index)
        group_paths.append(paths[index])
        for output in node.output:
            if output:
                producer[output] = me
        pending.extend((me, name) for name in node.input if name)
        if op_type not in CONTROL_FLOW and not domain:
            continue  # only control flow (and custom ops) carry graph attributes
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                subgraphs.setdefault(me, []).append((attribute.name, attribute.g))
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for k, sub in enumerate(attribute.graphs):
                    subgraphs.setdefault(me, []).append((f"{attribute.name}[{k}]", sub))
    for consumer, name in pending:
        source = producer.get(name)
        if source is None:
            if name in initializers or name in folded:
                continue  # weights are properties of the node, not edges
            source = producer[name] = add(OUTER_VALUE, name, "Outer", empty, -1, ())
        src.append(source)
        dst.append(consumer)
        tensor.append(intern(name))
    for name in outputs:
        sink = add(GRAPH_OUTPUT, name, "Output", empty, -1, ())
        source = producer.get(name)
        if source is not None:
            src.append(source)
            dst.append(sink)
            tensor.append(strings.intern(name))
    return GraphIR(
        title=title or getattr(graph, "name", "") or "graph",
        proto=graph,
        strings=strings,
        kind=np.array(kind, dtype=np.int8),
        name=np.array(names, dtype=np.int32),
        op=np.array(ops, dtype=np.int32),
        domain=np.array(domains, dtype=np.int32),
        proto_index=np.array(proto_index, dtype=np.int32),
        edge_src=np.array(src, dtype=np.int32),
        edge_dst=np.array(dst, dtype=np.int32),
        edge_tensor=np.array(tensor, dtype=np.int32),
        groups=build_group_tree(group_paths),
        hierarchy=hierarchy,
        subgraphs=subgraphs,
        functions=dict(functions or {}),
        value_types=value_types,
        initializers=initializers,
        folded=folded,
    )


WEIGHT_OPS = ("Identity", "Constant")


def weight_nodes(
    nodes: list[onnx.NodeProto], initializers: dict[str, onnx.TensorProto], outputs: set[str]
) -> dict[str, int]:
    """Nodes that only make a weight: a Constant, or an Identity of an initializer (TorchScript
    writes one per shared weight) — tensor → node index. A graph output stays a node."""
    found: dict[str, int] = {}
    for index, node in enumerate(nodes):
        if node.op_type not in WEIGHT_OPS or node.domain or len(node.output) != 1:
            continue
        if node.output[0] in outputs or not node.output[0]:
            continue
        if all(not name or name in initializers or name in found for name in node.input):
            found[node.output[0]] = index
    return found


def build_model_ir(model: onnx.ModelProto, title: str = "") -> GraphIR:
    functions = {(f.domain, f.name): f for f in model.functions}
    return build_ir(model.graph, functions, title or model.graph.name or "main_graph")
