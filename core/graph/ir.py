"""Columnar graph IR built from an ONNX graph without touching weights.

Nodes are rows of NumPy arrays (ids into one string table); graph inputs and outputs are pseudo
nodes so the view can draw them; edges run producer → consumer with the tensor's name. Subgraphs
(If/Loop/Scan bodies) and local functions are kept as protos and become an IR of their own when
the user enters them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, count, repeat
from typing import cast

import numpy as np
import onnx

from deploylens.core.bulk import array_of, no_cyclic_collection
from deploylens.core.graph.hierarchy import (
    MAX_SCOPE_DEPTH,
    MAX_SCOPE_NAME,
    NAME_SCOPES_KEY,
    SEP,
    GroupTree,
    name_prefix_key,
    parse_name_scopes,
    path_key,
    tree_from_keys,
)
from deploylens.core.graph.strings import StringTable
from deploylens.core.model.dtypes import element_type_name
from deploylens.core.model.summary import describe_type

OP, GRAPH_INPUT, GRAPH_OUTPUT, OUTER_VALUE = 0, 1, 2, 3
KIND_NAMES = {OP: "op", GRAPH_INPUT: "input", GRAPH_OUTPUT: "output", OUTER_VALUE: "outer"}
FunctionKey = tuple[str, str]
ValueType = tuple[str, list[int | str | None] | None]  # element type, shape
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
    value_types: dict[str, ValueType] = field(default_factory=dict)
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


def _hierarchy_keys(
    nodes: list[onnx.NodeProto], names: list[str]
) -> tuple[str, list[str], list[int], str]:
    """(source, path keys, each node's index into them, the keys' separator): the key of each
    distinct name prefix is made once, and no path tuple per node."""
    scoped: list[str] = []
    found_scopes = any(
        prop.key == NAME_SCOPES_KEY for node in nodes[:64] for prop in node.metadata_props
    )
    for node in nodes if found_scopes else ():
        key = ""
        for prop in node.metadata_props:
            if prop.key == NAME_SCOPES_KEY:
                key = path_key(parse_name_scopes(prop.value))
                found_scopes = True
                break
        scoped.append(key)
    if found_scopes:
        return "name_scopes", scoped, list(range(len(scoped))), SEP
    prefixes = [name.rpartition("/")[0] for name in names]
    distinct = dict.fromkeys(prefixes)
    where = dict(zip(distinct, count()))
    # name_prefix_key's clean case inline (a 100k-node model has ~54k distinct prefixes)
    keys = [
        prefix
        if prefix[:1] == "/"
        and len(prefix) <= MAX_SCOPE_NAME
        and prefix.count("/") <= MAX_SCOPE_DEPTH
        and "//" not in prefix
        and prefix[-1] != "/"
        else name_prefix_key(prefix)
        for prefix in distinct
    ]
    node_key = list(map(where.__getitem__, prefixes))
    scoped_nodes = np.fromiter(map(bool, keys), bool, len(keys))[node_key].sum()
    if nodes and scoped_nodes >= 0.5 * len(nodes):
        return "node_names", keys, node_key, "/"
    return "flat", [""], [0] * len(nodes), SEP


def build_ir(
    graph: onnx.GraphProto | onnx.FunctionProto,
    functions: dict[FunctionKey, onnx.FunctionProto] | None = None,
    title: str = "",
) -> GraphIR:
    """IR of a graph or a function body; values from an outer scope become ``outer`` nodes.

    Built column by column (list comprehensions over the protos' fields, edges from flattened
    input lists): a 100k-node model's per-node loop was most of its first view."""
    with no_cyclic_collection():
        return _build_ir(graph, functions, title)


def _build_ir(
    graph: onnx.GraphProto | onnx.FunctionProto,
    functions: dict[FunctionKey, onnx.FunctionProto] | None,
    title: str,
) -> GraphIR:
    strings = StringTable()
    ids = strings.ids
    nodes = list(graph.node)
    is_function = isinstance(graph, onnx.FunctionProto)
    initializers = {} if is_function else {t.name: t for t in graph.initializer}
    if is_function:
        inputs = [name for name in graph.input]
        outputs = [name for name in graph.output]
        value_types: dict[str, ValueType] = {}
    else:
        inputs = [v.name for v in graph.input if v.name not in initializers]
        outputs = [v.name for v in graph.output]
        value_types = declared_types([*graph.input, *graph.output, *graph.value_info])
        for initializer in initializers.values():
            value_types.setdefault(
                initializer.name,
                (element_type_name(initializer.data_type), list(initializer.dims)),
            )
    op_types = [node.op_type for node in nodes]
    node_names = [node.name for node in nodes]
    node_domains = [node.domain for node in nodes]
    hierarchy, keys, node_key, sep = _hierarchy_keys(nodes, node_names)
    keys.append("")  # the pseudo nodes' (last: a key's first use decides its group's id)
    root = len(keys) - 1
    folded = {} if is_function else weight_nodes(nodes, initializers, set(outputs), op_types)
    skipped = set(folded.values())
    kept = [i for i in range(len(nodes)) if i not in skipped] if skipped else range(len(nodes))
    pick = (lambda column: column) if not skipped else (lambda column: [column[i] for i in kept])
    kept_nodes = pick(nodes)
    empty = ids[""]
    kind: list[int] = []
    names: list[int] = []
    ops: list[int] = []
    domains: list[int] = []
    proto_index: list[int] = []
    group_keys: list[int] = []  # index into keys

    def add(node_kind: int, label: str, op: str, index: int = -1) -> int:
        kind.append(node_kind)
        names.append(ids[label])
        ops.append(ids[op])
        domains.append(empty)
        proto_index.append(index)
        group_keys.append(root)
        return len(kind) - 1

    producer = {name: add(GRAPH_INPUT, name, "Input") for name in inputs}
    first = len(kind)
    kind += [OP] * len(kept)
    labels = pick(node_names)
    if "" in labels:  # an unnamed node is called by its op and place
        labels = [node_names[i] or f"{op_types[i]}_{i}" for i in kept]
    names += strings.extend(labels)
    kept_ops = pick(op_types)
    ops += map(ids.__getitem__, kept_ops)
    kept_domains = pick(node_domains)
    domains += map(ids.__getitem__, [d or "ai.onnx" for d in kept_domains])
    proto_index += kept
    group_keys += pick(node_key)
    me = np.arange(first, first + len(kept))
    # slices, not the repeated fields: iterating upb's container ends in an IndexError it
    # formats (~1,700 instructions a node)
    produced = [node.output[:] for node in kept_nodes]
    outputs_made = list(chain.from_iterable(produced))
    unnamed = producer.get("")
    producer.update(
        zip(
            outputs_made,
            np.repeat(me, array_of(list(map(len, produced)), np.int64)).tolist(),
            strict=True,
        )
    )
    # each tensor a node makes, stored once (an SSA graph names each once: nothing to intern);
    # an edge's tensor is looked up here, its producer's output
    tensor_of = dict(zip(outputs_made, strings.extend(outputs_made), strict=True))
    if unnamed is None:
        producer.pop("", None)  # an absent optional output ("") is no tensor
    else:
        producer[""] = unnamed
    consumed = [node.input[:] for node in kept_nodes]
    consumer = np.repeat(me, array_of(list(map(len, consumed)), np.int64))
    wanted = list(chain.from_iterable(consumed))
    # what an input names: its producer; -1 for none (an absent optional input, "", and
    # weights, which are properties of the node); -2 for a value from an outer scope
    lookup = producer.copy()  # a whole-table copy, then the few weights no node makes
    lookup.update((name, -1) for name in chain(initializers, folded) if name not in producer)
    lookup[""] = -1
    source = list(map(lookup.get, wanted, repeat(-2, len(wanted))))
    if -2 in source:
        for k in [k for k, found in enumerate(source) if found == -2]:
            name = wanted[k]
            found = producer.get(name)
            if found is None:
                found = producer[name] = add(OUTER_VALUE, name, "Outer")
            source[k] = found
    sources = array_of(source, np.int64)
    linked = sources >= 0
    edges = np.flatnonzero(linked)
    src = sources[edges].tolist()
    dst = consumer[edges].tolist()
    linked_names = list(compress(wanted, linked.tolist()))
    made = list(map(tensor_of.get, linked_names))
    # None: a graph input's or an outer value's tensor, interned with its pseudo node; found
    # by list.index at C speed (nearly every model has a few, and a pass over every edge to
    # patch them was 2.6 % of a 100k-node build)
    k = -1
    try:
        while True:  # each search starts after the last: one pass in all, however many
            k = made.index(None, k + 1)
            made[k] = ids[linked_names[k]]
    except ValueError:
        pass
    tensor = cast("list[int]", made)
    subgraphs: dict[int, list[tuple[str, onnx.GraphProto]]] = {}
    carriers = (  # only control flow (and custom ops) carry graph attributes
        [
            j
            for j, (op, domain) in enumerate(zip(kept_ops, kept_domains, strict=True))
            if domain or op in CONTROL_FLOW
        ]
        if any(kept_domains) or not CONTROL_FLOW.isdisjoint(kept_ops)  # both at C speed
        else []
    )
    for j in carriers:
        i = kept[j]
        for attribute in nodes[i].attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                subgraphs.setdefault(first + j, []).append((attribute.name, attribute.g))
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for k, sub in enumerate(attribute.graphs):
                    subgraphs.setdefault(first + j, []).append((f"{attribute.name}[{k}]", sub))
    for name in outputs:
        sink = add(GRAPH_OUTPUT, name, "Output")
        found = producer.get(name)
        if found is not None:
            src.append(found)
            dst.append(sink)
            tensor.append(ids[name])
    return GraphIR(
        title=title or getattr(graph, "name", "") or "graph",
        proto=graph,
        strings=strings,
        kind=array_of(kind, np.int8),
        name=array_of(names, np.int32),
        op=array_of(ops, np.int32),
        domain=array_of(domains, np.int32),
        proto_index=array_of(proto_index, np.int32),
        edge_src=array_of(src, np.int32),
        edge_dst=array_of(dst, np.int32),
        edge_tensor=array_of(tensor, np.int32),
        groups=tree_from_keys(keys, group_keys, sep),
        hierarchy=hierarchy,
        subgraphs=subgraphs,
        functions=dict(functions or {}),
        value_types=value_types,
        initializers=initializers,
        folded=folded,
    )


def declared_types(values: list[onnx.ValueInfoProto]) -> dict[str, ValueType]:
    """name → (element type, shape) of typed values (a later one of a name wins), each distinct
    type read once: an exported or shape-inferred model declares every tensor (100k on 100k
    nodes), and reading each type apart took ~5 µs a value (0.5 s). The IR's declared types and
    the shapes job's inferred ones both come from here."""
    described: dict[bytes, ValueType] = {}
    found: dict[str, ValueType] = {}
    for value in values:
        type_proto = value.type
        key = type_proto.SerializeToString()
        pair = described.get(key)
        if pair is None:
            _, dtype, shape = describe_type(type_proto)
            pair = described[key] = (dtype or "?", shape)  # one shape list, shared: read-only
        found[value.name] = pair
    return found


WEIGHT_OPS = ("Identity", "Constant")


def weight_nodes(
    nodes: list[onnx.NodeProto],
    initializers: dict[str, onnx.TensorProto],
    outputs: set[str],
    op_types: list[str] | None = None,
) -> dict[str, int]:
    """Nodes that only make a weight: a Constant, or an Identity of an initializer (TorchScript
    writes one per shared weight) — tensor → node index. A graph output stays a node."""
    found: dict[str, int] = {}
    op_types = [node.op_type for node in nodes] if op_types is None else op_types
    for index in [i for i, op in enumerate(op_types) if op in WEIGHT_OPS]:
        node = nodes[index]
        if node.domain or len(node.output) != 1:
            continue
        if node.output[0] in outputs or not node.output[0]:
            continue
        if all(not name or name in initializers or name in found for name in node.input):
            found[node.output[0]] = index
    return found


def build_model_ir(model: onnx.ModelProto, title: str = "") -> GraphIR:
    functions = {(f.domain, f.name): f for f in model.functions}
    return build_ir(model.graph, functions, title or model.graph.name or "main_graph")
