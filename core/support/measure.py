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

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text
from deploylens.core.support.collect import _version, cache_dir
from deploylens.core.support.measured_types import (
    NOT_MEASURED,
    ORT_OK,
    CellAnswer,
    LibraryAnswers,
    MeasuredCell,
    MeasuredMatrix,
    MeasuredRow,
    NodeAnswer,
    Prediction,
)
from deploylens.core.support.result import MeasuredCache

MEASURED_SCHEMA = 7  # bump when a cell's meaning changes (7: importers and plugin registry)
TARGET_CC = "sm89"  # the one ahead-of-time target a TensorRT-RTX probe is built for
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
def _run(keys: list[str], ops: list[str], python: str | None, progress: Any) -> MeasuredMatrix:
    """One worker over ``keys``; a worker that dies is split in halves until the probe that
    kills it is alone, and that cell is recorded as crashed on both libraries."""
    from deploylens.core.support.request import MeasureRequest
    from deploylens.core.worker.client import JobFailure

    try:
        result: MeasuredMatrix = MeasureRequest(keys=keys, ops=ops).run(python, progress)
        return result
    except JobFailure as failure:
        if failure.kind not in DIED or len(keys) == 0:
            raise
        if len(keys) == 1:
            crashed = {keys[0]: CellAnswer("crashed", failure.message[:300])}
            if "@" in keys[0]:  # an attribute variant's key
                return MeasuredMatrix(
                    LibraryAnswers(variants=crashed), LibraryAnswers(variants=dict(crashed))
                )
            return MeasuredMatrix(
                LibraryAnswers(cells=crashed), LibraryAnswers(cells=dict(crashed))
            )
    half = len(keys) // 2
    first, second = (_run(part, [], python, progress) for part in (keys[:half], keys[half:]))
    return first.merge(second)


def measure(quick: bool = False, python: str | None = None, progress: Any = None) -> MeasuredMatrix:
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
    data.versions = version_set(quick)
    data.seconds = time.perf_counter() - started
    return data


def read_measured(path: str | Path) -> MeasuredMatrix:
    """A measured cache file, every cell checked (a cell without a state is an error here, not
    a ``KeyError`` in a panel)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"The measured cache {path} is unreadable ({exc}).") from None
    found = MeasuredMatrix.from_dict(data, f"the measured cache {Path(path).name}")
    found.cached = True
    return found


def load_measured(
    quick: bool = False, refresh: bool = False, python: str | None = None, progress: Any = None
) -> MeasuredMatrix:
    """The measured matrix for the installed libraries, measured once per version set (a cache
    file that does not read back is measured again: it is only a cache)."""
    path = cache_path(quick)
    if path.exists() and not refresh:
        try:
            return read_measured(path)
        except UserError:
            pass
    data = measure(quick, python, progress)
    atomic_write_text(path, json.dumps(data.to_dict()))  # compact: 16,000 cells
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


def measured_row(data: MeasuredMatrix, op: str, domain: str = "") -> MeasuredRow:
    """The op's measured cells by schema version and type (``deploylens support --op NAME
    --measured``), with what each library said and the probes that could not be made."""
    prefix = f"{domain or 'ai.onnx'}::{op}::"
    trt, ort = data.trt, data.ort
    cells = []
    for key in sorted(
        {k for lib in (trt, ort) for k in lib.cells if k.startswith(prefix)},
        key=lambda k: (int(k.split("::")[2]), k.split("::")[3]),
    ):
        _, _, since, dtype = key.split("::")
        said = trt.cells.get(key, NOT_MEASURED), ort.cells.get(key, NOT_MEASURED)
        cells.append(MeasuredCell(int(since), dtype, *said, data.seeds.get(key, "")))
    variants = []
    for key in sorted(k for k in trt.variants if k.startswith(prefix)):
        cell, _, mark = key.partition("@")
        _, _, since, dtype = cell.split("::")
        variants.append(MeasuredCell(int(since), dtype, trt.variants[key],
                                     ort.variants.get(key, NOT_MEASURED),
                                     data.seeds.get(key, ""), mark))  # fmt: skip
    return MeasuredRow(
        op=op,
        domain=domain or "ai.onnx",
        tensorrt_rtx=data.trt_name(),
        onnxruntime=data.ort_version(),
        target=data.versions.get("target", TARGET_CC),
        cells=cells,
        variants=variants,
        not_probed={
            k[len(prefix) :]: why for k, why in data.unprobed.items() if k.startswith(prefix)
        },
    )


@dataclass
class NodeCell:
    node: str
    key: str  # the measured cell: ai.onnx::ReduceMean::18::float
    runtime: bool = False  # an input the probe gives as a constant is computed at run time here
    signature: str = ""  # its attributes and optional inputs/outputs (probes.signature)
    custom: str = ""  # the op type of a node no ONNX schema has here (the parser's plugin lookup)


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
                key = f"{domain}::{node.op_type}::0::none"
                cells.append(NodeCell(name, key, custom=node.op_type))
                continue
            try:
                schema = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
            except onnx.defs.SchemaError:
                key = f"{domain or 'ai.onnx'}::{node.op_type}::0::none"
                cells.append(NodeCell(name, key, custom=node.op_type))
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
    model: Any, data: MeasuredMatrix, level: str, ignore: frozenset[str] = frozenset()
) -> Prediction:
    """What the measured cells say about a whole model: ``trt-parse``, ``trt-build`` (the
    installed TensorRT-RTX) or ``ort-run`` (ONNX Runtime CPU). ``ok`` is None where a node's
    cell was not measured (its type unknown, no probe could be made, or the harness could not
    answer), so a guess is never passed off as a measurement. A node whose constant-only
    input (axes, shape, scales) is computed at run time is judged by the probe that feeds
    that input at run time. Where an op's answer changes with its attributes, a node is judged
    by the variant probed with its own signature (``AttributeFamily``); ``ignore``: backend
    cases whose variants are left out (a benchmark predicting a case from the others)."""
    lib = data.library(level.split("-")[0])
    cells, runtime = lib.cells, lib.runtime
    fine, unanswered = LEVELS[level]
    families = attribute_families(data, level.split("-")[0], ignore)
    nodes = []
    signatures = data.signatures
    for use in model_cells(model):
        family = families.get(_family_key(use.key))
        asked = runtime.get(use.key) if use.runtime else None
        if use.runtime and family is not None and signatures.get(use.key) != use.signature:
            # the run-time probe of the node's own inputs: Resize's sizes, not its scales
            mark = "" if use.signature == family.base else f"@{use.signature}"
            asked = runtime.get(family.key + mark) or asked
        said = asked or cells.get(use.key)
        if said is None and use.custom:  # TensorRT looks it up as a plugin (only TensorRT's
            said = lib.plugin_answer(use.custom)  # answers hold a registry to ask)
        state = said.state if said else "not measured"
        message = said.message if said else data.unprobed.get(use.key, "")
        cell = use.key
        if state in fine and family is not None:  # the type passes: do its attributes?
            cell, state, message = family.judge(use, (state, message), fine, unanswered)
        nodes.append(NodeAnswer(use.node, cell, use.runtime, state, message))
    nodes += [NodeAnswer("(the model)", "model", False, "not measured", problem)
              for problem in model_problems(model)]  # fmt: skip
    unknown = [n for n in nodes if n.state == "not measured" or n.state in unanswered]
    blocked = [n for n in nodes if n.state not in fine and n not in unknown]
    ok = False if blocked else (None if unknown else True)
    return Prediction(ok, blocked, unknown, len(nodes))


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
    states: dict[str, CellAnswer]
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
        answers = {s.state in fine for s in self.states.values() if s.state not in unanswered}
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
        return self.key + mark, variant.state, variant.message


def attribute_families(
    data: MeasuredMatrix, lib: str, ignore: frozenset[str] = frozenset()
) -> dict[str, AttributeFamily]:
    """The attribute variants measured for ``lib``, by ``domain::op::since::class``."""
    answers = data.library(lib)
    variants, seeds, signatures = answers.variants, data.variant_seeds, data.signatures
    families: dict[str, AttributeFamily] = {}
    for key, said in variants.items():
        if ignore and set(seeds.get(key, ())) <= ignore:
            continue  # a variant only the ignored cases stand for
        cell, _, mark = key.partition("@")
        family = families.get(_family_key(cell))
        if family is None:
            base = signatures.get(cell, "")
            own = answers.cells.get(cell)
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


def verdict(model: Any, data: MeasuredMatrix, level: str) -> Prediction:
    """``predict`` with the source it came from named (the library, its version and the probe
    set), for ``deploylens support MODEL --target trt-rtx-measured|ort-cpu-measured``."""
    lib = level.split("-")[0]
    found = predict(model, data, level)
    said = data.trt_name() if lib == "trt" else f"ONNX Runtime CPU {data.ort_version()}"
    found.source = f"measured cells: {said}, {data.versions.get('probes', '?')} probe set"
    return found
