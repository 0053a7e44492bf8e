"""The measured support matrix: every probe (``probes.py``) asked of the installed TensorRT-RTX
parser and builder and of ONNX Runtime's CPU provider, cached per library version.

A cell's state is what the library did, never what a table says:

- TensorRT-RTX: ``builds`` (parsed and built ahead of time for one target), ``build-fails``
  (parsed; the builder refused), ``parse-fails`` (the parser's error code and message kept);
- ONNX Runtime CPU: ``runs`` (session and one run), ``loads`` (a session, but the type has no
  numpy array to run it with), ``run-fails``, ``session-fails``.

The probes run in the worker (the job, ``core/trt/cells.py``, sits with the TensorRT adapter it
drives), so a parser that crashes the process costs one worker, not the
caller: the driver then halves the batch until the crashing probe is alone and records it as
``crashed``."""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.files import atomic_write_text
from deploylens.core.support.collect import _version, cache_dir
from deploylens.core.support.result import MeasuredCache

MEASURED_SCHEMA = 6  # bump when a cell's meaning changes (6: attribute variants)
TARGET_CC = "sm89"  # the one ahead-of-time target a TensorRT-RTX probe is built for
TRT_OK = ("builds",)
ORT_OK = ("runs", "loads")
# A fixed sample for CI's --quick: ops whose cells span every state seen in a full probe.
QUICK_OPS = (
    "Relu", "Add", "Conv", "Resize", "Squeeze", "Cast", "Einsum", "NonZero", "TopK",
    "LayerNormalization", "Gelu", "GridSample", "DeformConv", "Mod", "BitShift", "Det",
    "Unique", "RoiAlign", "QuantizeLinear", "ScatterND", "CumSum", "Pad",
)  # fmt: skip


def version_set(quick: bool) -> dict[str, str]:
    return {
        "schema": str(MEASURED_SCHEMA),
        "onnx": _version("onnx"),
        "onnxruntime": _version("onnxruntime"),
        "tensorrt_rtx": _version("tensorrt-rtx-cu12")
        if _version("tensorrt-rtx-cu12") != "-"
        else _version("tensorrt_rtx"),
        "target": TARGET_CC,
        "probes": "quick" if quick else "full",
    }


def cache_path(quick: bool = False) -> Path:
    versions = json.dumps(version_set(quick), sort_keys=True).encode()
    return cache_dir() / f"measured-{hashlib.sha256(versions).hexdigest()[:16]}.json"


DIED = ("crashed", "exited", "disconnected")  # the worker process ended mid-probe


# -- in the caller ------------------------------------------------------------------------------
def _run(keys: list[str], ops: list[str], python: str | None, progress: Any) -> dict[str, Any]:
    """One worker over ``keys``; a worker that dies is split in halves until the probe that
    kills it is alone, and that cell is recorded as crashed on both libraries."""
    from deploylens.core.support.request import MeasureRequest
    from deploylens.core.worker.client import JobFailure

    try:
        result: dict[str, Any] = MeasureRequest(keys=keys, ops=ops).run(python, progress)
        return result
    except JobFailure as failure:
        if failure.kind not in DIED or len(keys) == 0:
            raise
        if len(keys) == 1:
            crashed = {"state": "crashed", "message": failure.message[:300]}
            where = "variants" if "@" in keys[0] else "cells"
            return {
                "unprobed": {},
                "seeds": {},
                "trt": {where: {keys[0]: crashed}},
                "ort": {where: {keys[0]: crashed}},
            }
    half = len(keys) // 2
    first, second = (_run(part, [], python, progress) for part in (keys[:half], keys[half:]))
    return _merged(first, second)


def _merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two halves' answers as one: every table of cells joined (a half's ``runtime`` or
    ``variants`` replaced the other's before), the rest (versions, product) from either."""
    for name, value in second.items():
        if isinstance(value, dict) and isinstance(first.get(name), dict):
            if name in ("trt", "ort"):
                first[name] = _merged(first[name], value)
            else:
                first[name].update(value)
        else:
            first.setdefault(name, value)
    return first


def measure(quick: bool = False, python: str | None = None, progress: Any = None) -> dict[str, Any]:
    """Every cell measured (``quick``: the ops in ``QUICK_OPS``), in a worker."""
    started = time.perf_counter()
    ops = list(QUICK_OPS) if quick else []
    from deploylens.core.worker.client import JobFailure

    try:
        data = _run([], ops, python, progress)
    except JobFailure as failure:
        if failure.kind not in DIED:
            raise
        from deploylens.core.support.probes import generate  # the crash: by cell, to find it

        keys = sorted(p.key for p in generate(set(ops) or None).probes)
        data = _run(keys, [], python, progress)
    data["versions"] = version_set(quick)
    data["seconds"] = time.perf_counter() - started
    return data


def load_measured(
    quick: bool = False, refresh: bool = False, python: str | None = None, progress: Any = None
) -> dict[str, Any]:
    """The measured matrix for the installed libraries, measured once per version set."""
    path = cache_path(quick)
    if path.exists() and not refresh:
        data: dict[str, Any] = json.loads(path.read_text())
        data["cached"] = True
        return data
    data = measure(quick, python, progress)
    atomic_write_text(path, json.dumps(data))
    data["cached"] = False
    return data


def measured_job(ctx: Any, params: dict[str, Any]) -> MeasuredCache:
    """The full measurement's cache file, else the quick one's; with ``only_cached`` and
    neither there, its ``path`` is empty. Measuring runs the probes in a worker
    of this worker's own (a crash there is isolated as in the CLI; cancelling this job ends
    it, a worker ending with its parent)."""
    from deploylens.core.support.request import MeasuredRequest

    request = MeasuredRequest.from_params(params)
    if not request.refresh:
        for quick in (False, True) if not request.quick else (True,):
            if cache_path(quick).exists():
                return MeasuredCache(str(cache_path(quick)), True)
    if request.only_cached:
        return MeasuredCache("", False)
    load_measured(request.quick, request.refresh, progress=ctx.progress)
    return MeasuredCache(str(cache_path(request.quick)), False)


def state_counts(data: dict[str, Any], lib: str) -> Counter[str]:
    return Counter(cell["state"] for cell in data[lib]["cells"].values())


def measured_row(data: dict[str, Any], op: str, domain: str = "") -> dict[str, Any]:
    """The op's measured cells by schema version and type (``deploylens support --op NAME
    --measured``), with what each library said and the probes that could not be made."""
    prefix = f"{domain or 'ai.onnx'}::{op}::"
    cells = []
    for key in sorted(
        {k for lib in ("trt", "ort") for k in data[lib]["cells"] if k.startswith(prefix)},
        key=lambda k: (int(k.split("::")[2]), k.split("::")[3]),
    ):
        _, _, since, dtype = key.split("::")
        cells.append(
            {
                "since": int(since),
                "dtype": dtype,
                "tensorrt_rtx": data["trt"]["cells"].get(key, {"state": "not measured"}),
                "ort_cpu": data["ort"]["cells"].get(key, {"state": "not measured"}),
                "probe": data.get("seeds", {}).get(key, ""),
            }
        )
    unprobed = {
        k[len(prefix) :]: why for k, why in data["unprobed"].items() if k.startswith(prefix)
    }
    variants = []
    for key in sorted(k for k in data["trt"].get("variants", {}) if k.startswith(prefix)):
        cell, _, mark = key.partition("@")
        _, _, since, dtype = cell.split("::")
        variants.append(
            {"since": int(since), "dtype": dtype, "signature": mark,
             "tensorrt_rtx": data["trt"]["variants"][key],
             "ort_cpu": data["ort"].get("variants", {}).get(key, {"state": "not measured"}),
             "probe": data.get("seeds", {}).get(key, "")}
        )  # fmt: skip
    return {
        "op": op,
        "domain": domain or "ai.onnx",
        "tensorrt_rtx": f"{data['trt'].get('product', 'TensorRT-RTX')} "
        f"{data['trt'].get('version', '(not installed)')}",
        "onnxruntime": data["ort"].get("version", "(not installed)"),
        "target": data["versions"]["target"],
        "cells": cells,
        "variants": variants,
        "not_probed": unprobed,
    }


def row_text(row: dict[str, Any]) -> str:
    """The measured row as a table, each refusal followed by the library's own words."""
    head = (
        f"{row['op']} ({row['domain']}), measured: {row['tensorrt_rtx']} (parse, then an "
        f"ahead-of-time build for {row['target']}) and ONNX Runtime {row['onnxruntime']} CPU "
        "(session, then one run)"
    )
    if not row["cells"] and not row["not_probed"]:
        return head + "\n  no cells: not an op of the probed domains, or not in this quick sample"
    lines = [head, f"  {'opset':>5}  {'type':14s} {'TensorRT-RTX':13s} ONNX Runtime CPU"]
    for cell in row["cells"]:
        trt, ort = cell["tensorrt_rtx"], cell["ort_cpu"]
        lines.append(f"  {cell['since']:>5}  {cell['dtype']:14s} {trt['state']:13s} {ort['state']}")
        for name, said in (("TensorRT-RTX", trt), ("ONNX Runtime", ort)):
            if said["state"] not in TRT_OK + ORT_OK and said.get("message"):
                code = f" [{said['code']}]" if said.get("code") else ""
                lines.append(f"           {name}{code}: {said['message'][:160]}")
    if row.get("variants"):
        lines.append("  attribute variants (the other attribute sets of ONNX's test cases, at "
                     "one type per class):")  # fmt: skip
        for variant in row["variants"]:
            trt, ort = variant["tensorrt_rtx"], variant["ort_cpu"]
            lines.append(f"  {variant['since']:>5}  {variant['dtype']:14s} {trt['state']:13s} "
                         f"{ort['state']:13s} {variant['signature']}")  # fmt: skip
    for cell, why in sorted(row["not_probed"].items()):
        lines.append(f"  not probed {cell.replace('::', ' ')}: {why}")
    return "\n".join(lines)


def summary_text(data: dict[str, Any]) -> str:
    trt, ort = state_counts(data, "trt"), state_counts(data, "ort")
    took = "cached" if data.get("cached") else f"measured in {data['seconds']:.0f} s"
    domains = Counter(k.split("::")[0] for k in data["trt"]["cells"] or data["ort"]["cells"])
    return "\n".join(
        [
            f"measured support matrix ({data['versions']['probes']} probe set; {took})",
            "  probes by domain: " + ", ".join(f"{d} {n}" for d, n in sorted(domains.items())),
            f"  not probed: {len(data['unprobed'])} cells (no valid one-node model; "
            "reasons in --json)",
            "  TensorRT-RTX: " + ", ".join(f"{s} {n}" for s, n in trt.most_common()),
            "  ONNX Runtime CPU: " + ", ".join(f"{s} {n}" for s, n in ort.most_common()),
            f"  attribute variants: {len(data['trt'].get('variants', {}))} (an op's other "
            "attribute sets, at one type per class)",
        ]
    )


@dataclass
class NodeCell:
    node: str
    key: str  # the measured cell: ai.onnx::ReduceMean::18::float
    runtime: bool = False  # an input the probe gives as a constant is computed at run time here
    signature: str = ""  # its attributes and optional inputs/outputs (probes.signature)


def _constants(graphs: list[Any]) -> set[str]:
    """Tensors known before the model runs: initializers, Constant outputs, and what a node
    computes from constants alone (what the parser can fold; random ops excluded)."""
    known = {t.name for g in graphs for t in g.initializer}
    for graph in graphs:
        for node in graph.node:
            foldable = node.op_type == "Constant" or (
                node.op_type not in ("RandomNormal", "RandomUniform", "Multinomial")
                and node.input
                and all(not i or i in known for i in node.input)
            )
            if foldable:
                known.update(o for o in node.output if o)
    return known


def model_cells(model: Any) -> list[NodeCell]:
    """The measured cell of each node (subgraphs included): the schema version the model's
    opset resolves to and the element type of the node's first input; an op outside the
    probed domains gets a cell that is never measured."""
    import onnx

    from deploylens.core.model.summary import iter_subgraphs
    from deploylens.core.support.analysis import _value_types
    from deploylens.core.support.probes import DOMAINS, PAIRED, Cell, signature

    graphs = [model.graph, *iter_subgraphs(model.graph.node)]
    types = _value_types(model, graphs)
    constants = _constants(graphs)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    cells = []
    index = 0
    for graph in graphs:
        for node in graph.node:
            index += 1
            domain = "" if node.domain == "ai.onnx" else node.domain
            name = node.name or f"{node.op_type}_{index}"
            if domain not in DOMAINS:  # not probed: its cell is unknown, never "fine"
                cells.append(NodeCell(name, f"{domain}::{node.op_type}::0::none"))
                continue
            try:
                schema = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
            except onnx.defs.SchemaError:
                cells.append(NodeCell(name, f"{domain or 'ai.onnx'}::{node.op_type}::0::none"))
                continue
            first = types.get(node.input[0]) if node.input and node.input[0] else None
            dtype = first[len("tensor(") : -1] if first else ("none" if not node.input else "?")
            if node.op_type in PAIRED and not domain:
                dtype += ">" + _second_type(node, types)
            formals = schema.inputs
            primary = formals[0].type_str if formals else ""
            runtime = any(
                given
                and given not in constants
                and formals[min(i, len(formals) - 1)].type_str != primary
                for i, given in enumerate(node.input)
            )
            key = Cell(domain, node.op_type, schema.since_version, dtype).key
            cells.append(NodeCell(name, key, runtime, signature(node, schema)))
    return cells


def _second_type(node: Any, types: dict[str, str]) -> str:
    """The second type a ``PAIRED`` op's verdict depends on (Cast's ``to``, CastLike's donor,
    Pow's exponent, QuantizeLinear's zero point — uint8 or ``output_dtype`` without one), or
    ``?``."""
    from onnx import TensorProto

    from deploylens.core.support.probes import PAIRED

    attributes = {a.name: a for a in node.attribute}
    if node.op_type == "Cast":
        return (
            str(TensorProto.DataType.Name(attributes["to"].i)).lower()
            if "to" in attributes
            else "?"
        )
    where = PAIRED[node.op_type]
    assert where is not None
    given = node.input[where] if where < len(node.input) else ""
    if not given and node.op_type == "QuantizeLinear":
        chosen = attributes["output_dtype"].i if "output_dtype" in attributes else 0
        return str(TensorProto.DataType.Name(chosen)).lower() if chosen else "uint8"
    found = types.get(given) if given else None
    return found[len("tensor(") : -1] if found else "?"


# For each question: the states that answer yes, and those that leave it unanswered (the
# one-node harness could not measure it: prediction says "not measured", never "fine").
LEVELS = {
    "trt-parse": (("builds", "build-fails", "io-type", "needs-profile"), ("needs-gpu",)),
    "trt-build": (("builds",), ("io-type", "needs-profile", "needs-gpu")),
    "ort-run": (ORT_OK, ()),
}


def predict(
    model: Any, data: dict[str, Any], level: str, ignore: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """What the measured cells say about a whole model: ``trt-parse``, ``trt-build`` (the
    installed TensorRT-RTX) or ``ort-run`` (ONNX Runtime CPU). ``ok`` is None where a node's
    cell was not measured (its type unknown, no probe could be made, or the harness could not
    answer), so a guess is never passed off as a measurement. A node whose constant-only
    input (axes, shape, scales) is computed at run time is judged by the probe that feeds
    that input at run time. Where an op's answer changes with its attributes, a node is judged
    by the variant probed with its own signature (``AttributeFamily``); ``ignore``: backend
    cases whose variants are left out (a benchmark predicting a case from the others)."""
    lib = level.split("-")[0]
    cells, runtime = data[lib]["cells"], data[lib].get("runtime", {})
    fine, unanswered = LEVELS[level]
    families = attribute_families(data, lib, ignore)
    nodes = []
    signatures = data.get("signatures", {})
    for use in model_cells(model):
        family = families.get(_family_key(use.key))
        asked = runtime.get(use.key) if use.runtime else None
        if use.runtime and family is not None and signatures.get(use.key) != use.signature:
            # the run-time probe of the node's own inputs: Resize's sizes, not its scales
            mark = "" if use.signature == family.base else f"@{use.signature}"
            asked = runtime.get(family.key + mark) or asked
        said = asked or cells.get(use.key)
        state = said["state"] if said else "not measured"
        message = said.get("message", "") if said else data["unprobed"].get(use.key, "")
        cell = use.key
        if state in fine and family is not None:  # the type passes: do its attributes?
            cell, state, message = family.judge(use, (state, message), fine, unanswered)
        nodes.append({"node": use.node, "cell": cell, "runtime": use.runtime, "state": state,
                      "message": message})  # fmt: skip
    nodes += [{"node": "(the model)", "cell": "model", "runtime": False, "state": "not measured",
               "message": problem} for problem in model_problems(model)]  # fmt: skip
    unknown = [n for n in nodes if n["state"] == "not measured" or n["state"] in unanswered]
    blocked = [n for n in nodes if n["state"] not in fine and n not in unknown]
    ok = False if blocked else (None if unknown else True)
    return {"ok": ok, "blocked": blocked, "not_measured": unknown, "nodes": len(nodes)}


def model_problems(model: Any) -> list[str]:
    """What makes a whole model fail whatever its ops, which no cell can answer (cheap checks
    only: this runs where a model opens): weights left out of the file (Polygraphy's
    "weightless" models), sparse initializers, a graph without outputs, a name declared twice
    among the inputs, the outputs or the value infos. Each makes the prediction "not
    measured", never OK."""
    graph = model.graph
    problems = []
    empty = [t.name for t in graph.initializer if _carries_no_data(t)]
    if empty:
        problems.append(f"{len(empty)} initializer(s) carry no data ({empty[0]} …): the file's "
                        "weights were left out, so no parser can import them")  # fmt: skip
    if graph.sparse_initializer:
        problems.append(f"{len(graph.sparse_initializer)} sparse initializer(s): not measured")
    if not graph.output:
        problems.append("the graph has no outputs")
    for kind, values in (("input", graph.input), ("output", graph.output),
                         ("value info", graph.value_info)):  # fmt: skip
        twice = sorted(n for n, count in Counter(v.name for v in values).items() if count > 1)
        if twice:
            problems.append(f"the {kind} {twice[0]!r} is declared twice")
    return problems


def _carries_no_data(tensor: Any) -> bool:
    """An initializer with elements, kept in the file, whose data fields are all empty."""
    from onnx import TensorProto

    if tensor.data_location == TensorProto.EXTERNAL or not tensor.dims:
        return False
    if any(d <= 0 for d in tensor.dims):
        return False
    held = ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
            "string_data")  # fmt: skip
    return not any(len(getattr(tensor, name)) for name in held)


@dataclass
class AttributeFamily:
    """One op version's attribute variants, all probed at one type of a class (float, int):
    ``states`` by signature, the cell's own probe's among them (``base``)."""

    key: str  # the cell they were probed in: ai.onnx::MaxPool::12::float
    base: str
    states: dict[str, dict[str, str]]
    signatures: dict[str, str]  # each cell's own probe's signature, by cell key

    def judge(
        self, use: NodeCell, said: tuple[str, str], fine: tuple[str, ...],
        unanswered: tuple[str, ...],
    ) -> tuple[str, str, str]:  # fmt: skip
        """(cell, state, message) for a node whose type cell passes (``said``: its state and
        message). The type cell stands where the node asks what its probe asked, or where every
        variant answers alike (the attributes do not matter); else the node's own signature's
        answer, or "not measured" when its combination was not probed."""
        state, message = said
        if use.signature == self.signatures.get(use.key):
            return use.key, state, message
        answers = {s["state"] in fine for s in self.states.values() if s["state"] not in unanswered}
        variant = self.states.get(use.signature)
        if variant is None and len(answers) <= 1:
            return use.key, state, message
        if variant is None:
            return (
                use.key,
                "not measured",
                (
                    f"this op's answer depends on its attributes ({len(self.states)} combinations "
                    f"probed); this node's ({use.signature}) was not one of them"
                ),
            )
        mark = "" if use.signature == self.base else f"@{use.signature}"
        return self.key + mark, variant["state"], variant.get("message", "")


def attribute_families(
    data: dict[str, Any], lib: str, ignore: frozenset[str] = frozenset()
) -> dict[str, AttributeFamily]:
    """The attribute variants measured for ``lib``, by ``domain::op::since::class``."""
    variants = data[lib].get("variants", {})
    seeds = data.get("variant_seeds", {})
    signatures = data.get("signatures", {})
    families: dict[str, AttributeFamily] = {}
    for key, said in variants.items():
        if ignore and set(seeds.get(key, ())) <= ignore:
            continue  # a variant only the ignored cases stand for
        cell, _, mark = key.partition("@")
        family = families.get(_family_key(cell))
        if family is None:
            base = signatures.get(cell, "")
            own = data[lib]["cells"].get(cell)
            if own is None:
                continue
            family = AttributeFamily(cell, base, {base: own}, signatures)
            families[_family_key(cell)] = family
        family.states[mark] = said
    return families


def _family_key(cell: str) -> str:
    """``domain::op::since::class``: the variants that answer for a cell's type."""
    from deploylens.core.support.probes import type_class

    prefix, _, dtype = cell.rpartition("::")
    return f"{prefix}::{type_class(dtype)}"


# The targets predicted from the measured cells without a parse (CLI ``--target``, the panel's
# "(measured)" entries), and the question each asks of a node's cell.
MEASURED_LEVELS = {"trt-rtx-measured": "trt-build", "ort-cpu-measured": "ort-run"}


def verdict(model: Any, data: dict[str, Any], level: str) -> dict[str, Any]:
    """``predict`` with the source it came from named (the library, its version and the probe
    set), for ``deploylens support MODEL --target trt-rtx-measured|ort-cpu-measured``."""
    lib = level.split("-")[0]
    said = data[lib]
    product = said.get("product", "TensorRT-RTX") if lib == "trt" else "ONNX Runtime CPU"
    found = predict(model, data, level)
    found["source"] = (
        f"measured cells: {product} {said.get('version', '(not installed)')}, "
        f"{data['versions']['probes']} probe set"
    )
    return found


def verdict_text(target: str, found: dict[str, Any]) -> str:
    """OK / BLOCKED / INCONCLUSIVE (a node with no measured cell: never passed as fine)."""
    if found["ok"]:
        head = f"OK: every node's measured cell passes ({found['nodes']} nodes)"
    elif found["ok"] is False:
        head = f"BLOCKED: {len(found['blocked'])} node(s) whose measured cell fails"
    else:
        head = (
            f"INCONCLUSIVE: {len(found['not_measured'])} node(s) have no measured cell; "
            "ask the live parser (--target trt-rtx) or run the model"
        )
    lines = [f"{target} (predicted from the {found['source']}): {head}"]
    for node in found["blocked"][:20]:
        said = f" — {node['message'][:140]}" if node["message"] else ""
        lines.append(f"  {node['node']} ({node['cell']}): {node['state']}{said}")
    for node in found["not_measured"][:10]:
        why = f" — {node['message'][:100]}" if node["message"] else ""
        lines.append(f"  not measured: {node['node']} ({node['cell']}){why}")
    return "\n".join(lines)
