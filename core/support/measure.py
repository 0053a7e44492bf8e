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
from deploylens.core.files import write_cache_file
from deploylens.core.support.collect import _version, cache_dir
from deploylens.core.support.measured_types import (
    NOT_MEASURED,
    ORT_OK,
    STATES,
    CellAnswer,
    LibraryAnswers,
    MeasuredCell,
    MeasuredMatrix,
    MeasuredRow,
    NodeAnswer,
    Prediction,
)
from deploylens.core.support.result import MeasuredCache

MEASURED_SCHEMA = 9  # bump when a cell's meaning changes (9: exporter forms, probe profiles, lists)
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
        "forms": _forms_digest(),
    }


def _forms_digest() -> str:
    """The bundled exporter forms' content: new forms are new probes, so a new cache."""
    from importlib.resources import files

    try:
        data = (files("deploylens.resources") / "support" / "exporter_forms.json").read_bytes()
    except OSError:
        return "none"
    return hashlib.sha256(data).hexdigest()[:12]


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


MEASURED_LIMIT = 256 << 20


def read_measured(path: str | Path, versions: dict[str, str] | None = None) -> MeasuredMatrix:
    """A measured cache file, read back guarded (a regular file, bounded, finite numbers) and
    every cell checked (a cell without a state is an error here, not a ``KeyError`` in a
    panel). A file without both libraries' answers, or made for other library versions than
    ``versions``, is not this cache: it never says "TensorRT-RTX (not installed)" for a
    library that is."""
    from deploylens.core.own_files import read_own_json

    name = Path(path).name
    data = read_own_json(path, "measured cache", MEASURED_LIMIT)
    if not isinstance(data, dict) or not {"trt", "ort", "versions"} <= data.keys():
        raise UserError(f"The measured cache {name} lacks a library's answers.")
    found = MeasuredMatrix.from_dict(data, f"the measured cache {name}")
    if versions is not None and found.versions != versions:
        raise UserError(f"The measured cache {name} was made for other library versions.")
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
            return read_measured(path, version_set(quick))
        except UserError:
            pass
    data = measure(quick, python, progress)
    write_cache_file(path, json.dumps(data.to_dict()))  # compact: 16,000 cells
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
            path = cache_path(quick)
            if path.exists() and _readable(path, quick):
                return MeasuredCache(str(path), True)
    if request.only_cached:
        return MeasuredCache("", False)
    load_measured(request.quick, request.refresh, progress=ctx.progress)  # the cache written
    return MeasuredCache(str(cache_path(request.quick)), False)


def _readable(path: Path, quick: bool) -> bool:
    try:
        read_measured(path, version_set(quick))
    except UserError:
        return False
    return True


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
    signature: str = ""  # its attributes, optional inputs/outputs and marks (probes.signature)
    custom: str = ""  # the op type of a node no ONNX schema has here (the parser's plugin lookup)
    constant: bool = False  # a Constant node: the parser imports its value as weights


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

    from deploylens.core.model.walk import iter_subgraphs
    from deploylens.core.support.analysis import _value_types
    from deploylens.core.support.probes import DOMAINS, PAIRED, Cell, marks, signature

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
            form = signature(node, schema) + marks(node, schema, constants.__contains__)
            cells.append(NodeCell(name, key, runtime, form, constant=node.op_type == "Constant"))
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
    name = level.split("-")[0]
    lib = data.library(name)
    fine, unanswered = LEVELS[level]
    families = attribute_families(data, name, ignore)
    nodes = []
    for use in model_cells(model):
        cell, said = node_answer(use, name, lib, families.get(_family_key(use.key)), data, fine)
        if said is None and use.custom:  # TensorRT looks it up as a plugin (only TensorRT's
            said = lib.plugin_answer(use.custom)  # answers hold a registry to ask)
        if said is not None and said.state not in STATES[name]:  # never another target's word
            said = CellAnswer("not measured", f"{FOREIGN_STATE} {said.state!r} for {name}: "
                              f"{said.message}")  # fmt: skip
        state = said.state if said else "not measured"
        message = said.message if said else data.unprobed.get(use.key, "")
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


# A Constant node is no kernel anywhere: each library takes its value before running, and says
# so in its own states (TensorRT's "builds" once decided an ONNX Runtime verdict: BLOCKED).
FOLDED_CONSTANT = {
    "trt": CellAnswer("builds", "a Constant: the parser imports its value as weights"),
    "ort": CellAnswer("runs", "a Constant: ONNX Runtime makes its value an initializer on load"),
}


FOREIGN_STATE = "a cell in another library's state"  # a bug: bench/support_measured.py fails on it


def node_answer(
    use: NodeCell,
    lib_name: str,
    lib: LibraryAnswers,
    family: AttributeFamily | None,
    data: MeasuredMatrix,
    fine: tuple[str, ...],
) -> tuple[str, CellAnswer | None]:
    """(cell, answer) for one node: the probe of its own form — its type's cell where the
    node asks what that probe asked, else the variant probed with its signature (attributes,
    optional inputs and outputs, constant or run-time inputs: a one-output LayerNormalization
    is not the spec's three-output one, Resize with run-time sizes is not Resize with constant
    scales), whether that answer is a pass or a fail. A form never probed takes the answer
    its probed forms share; where they differ it is not measured — never blocked by a probe
    of another form."""
    from deploylens.core.support.probes import RUNTIME_MARK

    if use.constant:
        return use.key, FOLDED_CONSTANT[lib_name]
    own = data.signatures.get(use.key)
    form, runtime_form = use.signature, use.signature.endswith(RUNTIME_MARK)
    base = form.removesuffix(RUNTIME_MARK)
    typed = lib.cells.get(use.key)
    if own is not None and form == own and typed is not None:
        return use.key, typed
    if own is not None and runtime_form and base == own and use.key in lib.runtime:
        return use.key, lib.runtime[use.key]
    if family is not None:
        variant = family.states.get(form)
        if variant is None and runtime_form:  # a backend case's run-time twin of this form
            twin = family.key if base == family.base else f"{family.key}@{base}"
            variant = lib.runtime.get(twin)
        if variant is not None:
            mark = "" if form == family.base else f"@{form}"
            return family.key + mark, _with_type(variant, typed, use, family, fine)
    if typed is None:
        return use.key, None
    alike = [typed, *(family.states.values() if family is not None else ())]
    probed_forms = [own or "", *(family.states if family is not None else ())]
    unseen = _unseen_settings(form, probed_forms)
    if unseen:  # a mode or flag no probe ever set: nothing measured stands for it
        return use.key, CellAnswer(
            "not measured",
            f"this node sets {', '.join(unseen)}, which none of the {len(probed_forms)} probed "
            f"form(s) of {use.key.split('::')[1]} sets",
        )
    if len({answer.state in fine for answer in alike}) == 1:
        return use.key, typed  # every probed form answers alike: the form does not matter
    probed = len(family.states) if family is not None else 1
    return use.key, CellAnswer(
        "not measured",
        f"this node's form ({_form_text(form)}) was not probed, and the {probed} form(s) "
        f"probed of {use.key.split('::')[1]} answer differently",
    )


def _settings(form: str) -> set[str]:
    """A signature's attribute settings (``layout=1``, ``mode=linear``, ``kernel_shape``),
    without its inputs, outputs and run-time marks."""
    return {part for part in form.split(";") if part
            and not part.startswith(("in=", "out=")) and part not in ("rt", "const")}  # fmt: skip


def _unseen_settings(form: str, probed: list[str]) -> list[str]:
    """The node's settings of an attribute that no probed form sets at all (GRU's
    ``layout=1``: its default is never in a signature, so every probed GRU form ran with
    layout 0 — ONNX Runtime's CPU kernel refuses 1). An attribute some probed form sets, with
    any value (Shape's start, an axis), is left to the forms."""
    seen = {part.split("=", 1)[0] for p in probed for part in _settings(p)}
    return sorted(s for s in _settings(form) if s.split("=", 1)[0] not in seen)


def _with_type(
    variant: CellAnswer,
    typed: CellAnswer | None,
    use: NodeCell,
    family: AttributeFamily,
    fine: tuple[str, ...],
) -> CellAnswer:
    """A form probed at its type class's first type, for a node of another type of the class:
    both must pass; a type whose own probe fails (in another form) leaves it unanswered."""
    if use.key.rpartition("::")[2] == family.key.rpartition("::")[2] or typed is None:
        return variant
    if variant.state not in fine or typed.state in fine:
        return variant
    return CellAnswer(
        "not measured",
        f"this form passes at {family.key.rpartition('::')[2]}, but the "
        f"{use.key.rpartition('::')[2]} probe (another form) failed: {typed.message[:120]}",
    )


def _form_text(form: str) -> str:
    """A signature as words: ``kernel_shape, pads, strides; inputs 0; 1 output; run-time
    inputs``."""
    parts = []
    for part in form.split(";"):
        if part.startswith("in="):
            parts.append(f"inputs {part[3:] or 'none'}")
        elif part.startswith("out="):
            parts.append(f"{part[4:]} output(s)")
        elif part == "rt":
            parts.append("an input computed at run time")
        elif part == "const":
            parts.append("constant inputs")
        elif part:
            parts.append(part)
    return ", ".join(parts)


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


def verdict(model: Any, data: MeasuredMatrix, level: str) -> Prediction:
    """``predict`` with the source it came from named (the library, its version and the probe
    set), for ``deploylens support MODEL --target trt-rtx-measured|ort-cpu-measured``."""
    lib = level.split("-")[0]
    found = predict(model, data, level)
    said = data.trt_name() if lib == "trt" else f"ONNX Runtime CPU {data.ort_version()}"
    found.source = f"measured cells: {said}, {data.versions.get('probes', '?')} probe set"
    return found
