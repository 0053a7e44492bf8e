"""Which nodes of a model block which deployment target, why, and what to do about it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import onnx

from deploylens.core.errors import UserError
from deploylens.core.model.domains import domain_name
from deploylens.core.model.dtypes import element_type_name
from deploylens.core.model.isolated import run_isolated
from deploylens.core.model.walk import iter_subgraphs
from deploylens.core.model.weightless import without_weight_data
from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, judged
from deploylens.core.results import Verdict as JobVerdict
from deploylens.core.support.fixes import Fix, FixSettings, ladder, numbered
from deploylens.core.support.matrix import SupportMatrix, Verdict, tensor_type

MAX_NODE_NAMES = 20
ORT_PROVIDERS = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "dml": "DmlExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
}


@dataclass(frozen=True)
class Target:
    runtime: str  # "ort" | "trt"
    detail: str  # provider name or TensorRT version
    label: str


def parse_target(text: str) -> Target:
    """``ort-cpu``, ``ort-cuda``, ``ort-<Provider>``, ``trt-10.1``."""
    runtime, _, rest = text.strip().partition("-")
    if runtime == "ort":
        provider = ORT_PROVIDERS.get(rest.lower(), rest or "CPUExecutionProvider")
        return Target("ort", provider, text)
    if runtime == "trt" and rest:
        return Target("trt", rest, text)
    raise UserError(
        f"Unknown target '{text}': use ort-cpu, ort-cuda, ort-<Provider> or "
        "trt-<version> (e.g. trt-10.1)."
    )


@dataclass
class Blocker:
    op: str  # as shown: "Asinh", "custom::deform_conv2d", "(tensor storage)"
    count: int
    nodes: list[str]
    reason: str
    fixes: list[Fix] = field(default_factory=list)
    key: tuple[str, str] | None = None  # (domain, op type); None for model-level blockers


@dataclass
class TargetReport:
    target: str
    ok: bool
    blockers: list[Blocker]
    opset_range: tuple[int, int] | None
    model_opset: int
    notes: list[str] = field(default_factory=list)
    inconclusive: bool = False  # not OK, but not blocked either: part of the model is unanswered
    nodes: int = 0  # the nodes judged (with an answer): what an OK stands on

    def verdict(self) -> JobVerdict:
        """OK / BLOCKED / INCONCLUSIVE for the CLI's exit status and the panel's headline: an
        OK over no node judged is INCONCLUSIVE (the evidence rule)."""
        evidence = Evidence(self.nodes, "node(s) judged", "" if self.nodes else "no node judged")
        if self.blockers and not self.ok and not self.inconclusive:
            return judged(evidence, f"BLOCKED ({len(self.blockers)} blocker(s))", "fail")
        if self.inconclusive:
            said = next((n for n in self.notes if n.startswith("inconclusive")), "")
            return JobVerdict(
                "INCONCLUSIVE", "warn", EXIT_INCONCLUSIVE, replace(evidence, missing=said)
            )
        if not self.ok:
            return judged(evidence, "BLOCKED", "fail")
        return judged(evidence, "OK", "pass")


@dataclass
class _OpUse:
    domain: str
    op: str
    nodes: list[str]
    types: dict[tuple[tuple[str, str | None], ...], list[str]]  # input types -> node names


def _value_types(model: onnx.ModelProto, graphs: list[onnx.GraphProto]) -> dict[str, str]:
    """Tensor name → ``tensor(...)`` type string, after shape inference (best effort; onnx's
    inference runs in a forked child because it aborts the process on some malformed models)."""
    inferred = run_isolated(_inferred_types, model)
    if isinstance(inferred, dict):
        return inferred
    return _declared_types(graphs)  # analysis still works, only with the declared types


def _inferred_types(model: onnx.ModelProto) -> dict[str, str] | None:
    try:
        inferred = onnx.shape_inference.infer_shapes(
            without_weight_data(model), check_type=False, strict_mode=False
        )
    except Exception:
        return None
    return _declared_types([inferred.graph, *iter_subgraphs(inferred.graph.node)])


def _declared_types(graphs: list[onnx.GraphProto]) -> dict[str, str]:
    types: dict[str, str] = {}
    for graph in graphs:
        for value in (*graph.input, *graph.output, *graph.value_info):
            kind = value.type.WhichOneof("value")
            if kind == "tensor_type":
                named = tensor_type(element_type_name(value.type.tensor_type.elem_type))
                if named is not None:  # "?": unknown, as if not declared
                    types[value.name] = named
        for tensor in graph.initializer:
            named = tensor_type(element_type_name(tensor.data_type))
            if named is not None:
                types[tensor.name] = named
    return types


def collect_ops(
    model: onnx.ModelProto, matrix: SupportMatrix, graphs: list[onnx.GraphProto] | None = None
) -> dict[tuple[str, str], _OpUse]:
    graphs = graphs or [model.graph, *iter_subgraphs(model.graph.node)]
    value_types = _value_types(model, graphs)
    uses: dict[tuple[str, str], _OpUse] = {}
    formals: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    opsets = {domain_name(o.domain): o.version for o in model.opset_import}
    index = 0
    for graph in graphs:
        for node in graph.node:
            index += 1
            key = (domain_name(node.domain), node.op_type)
            use = uses.get(key)
            if use is None:
                use = uses[key] = _OpUse(key[0], key[1], [], defaultdict(list))
                history = matrix.history(*key)
                version = history.resolve(opsets.get(key[0], 1)) if history else None
                formals[key] = (
                    [n for n, _ in version.inputs] if version else [],
                    [n for n, _ in version.outputs] if version else [],
                )
            name = node.name or f"{node.op_type}_{index}"
            use.nodes.append(name)
            ins, outs = formals[key]
            bound = tuple(
                [(ins[i], value_types.get(t)) for i, t in enumerate(node.input[: len(ins)]) if t]
                + [
                    (outs[i], value_types.get(t))
                    for i, t in enumerate(node.output[: len(outs)])
                    if t
                ]
            )
            use.types[bound].append(name)
    return uses


def _verdict(
    matrix: SupportMatrix,
    target: Target,
    domain: str,
    op: str,
    opset: int,
    types: dict[str, str | None] | None,
) -> Verdict:
    if target.runtime == "ort":
        return matrix.ort_verdict(domain, op, opset, target.detail, types)
    dtypes = sorted(
        {
            t[7:-1].replace("float", "float32") if t == "tensor(float)" else t[7:-1]
            for t in _data_types(matrix, domain, op, opset, types or {})
            if t
        }
    )
    return matrix.trt_verdict(domain, op, opset, target.detail, dtypes or None)


INDEX_TYPES = {"tensor(int32)", "tensor(int64)"}


def _data_types(
    matrix: SupportMatrix, domain: str, op: str, opset: int, types: dict[str, str | None]
) -> list[str | None]:
    """The types onnx-tensorrt's "supported types" column speaks of: the op's data inputs.
    A fixed-type input (Reshape's int64 ``shape``) or an index/shape constraint (Gather's
    ``Tind``, ConstantOfShape's ``T1``, RoiAlign's ``batch_indices``) is not checked against
    it — doing so blocked Reshape/Gather/Slice on 8.6 and ConstantOfShape everywhere; nor is an
    output (Greater's and IsNaN's BOOL result, Shape's INT64): checking outputs blocked every
    comparison op, which the live TensorRT-RTX parser accepts (bench/trt_crosscheck.py)."""
    history = matrix.history(domain, op)
    version = history.resolve(opset) if history else None
    if version is None:
        return list(types.values())
    params = dict(version.inputs)
    primary = version.inputs[0][1] if version.inputs else ""
    kept = []
    for name, type_ in types.items():
        if name not in params:  # an output: the column lists what the op takes
            continue
        allowed = version.type_constraints.get(params.get(name, ""))
        if allowed is None or set(allowed) <= INDEX_TYPES:
            continue
        if params[name] != primary:  # a parameter of another type (QuantizeLinear's INT8
            continue  # zero point beside its FP32 data: every QDQ model was "not INT8")
        kept.append(type_)
    return kept


def analyze(
    model: onnx.ModelProto,
    matrix: SupportMatrix,
    targets: list[Target],
    uses: dict[tuple[str, str], _OpUse] | None = None,
) -> list[TargetReport]:
    graphs = [model.graph, *iter_subgraphs(model.graph.node)]
    uses = uses if uses is not None else collect_ops(model, matrix, graphs)
    opsets = {domain_name(o.domain): o.version for o in model.opset_import}
    model_opset = opsets.get("ai.onnx", 0)
    judged_nodes = sum(len(use.nodes) for use in uses.values())
    reports = []
    for target in targets:
        blockers: list[Blocker] = []
        over: list[str] = []  # nodes blocked only by the model's opset (a whole-model limit)
        limit: Verdict | None = None
        for (domain, op), use in sorted(uses.items()):
            opset = opsets.get(domain, 1)
            for bound, names in use.types.items():
                verdict = _verdict(matrix, target, domain, op, opset, dict(bound))
                if not verdict.ok and verdict.parses is not None:
                    over += names
                    limit = verdict
                elif not verdict.ok:
                    blockers.append(
                        Blocker(
                            f"{domain}::{op}" if domain != "ai.onnx" else op,
                            len(names),
                            names[:MAX_NODE_NAMES],
                            verdict.reason,
                            key=(domain, op),
                        )
                    )
        if limit is not None and limit.parses is not None:
            blockers.insert(0, opset_limit_blocker(limit, over, model_opset, target.label))
        blockers.extend(_model_level_blockers(graphs, target))
        workable = workable_opsets(matrix, target, uses)
        span = (workable[0], workable[-1]) if workable else None
        for blocker in blockers:
            if blocker.fixes or blocker.key is None:
                continue
            own = workable_opsets(matrix, target, {blocker.key: uses[blocker.key]})
            blocker.fixes = ladder(
                blocker.key[1],
                target.label,
                own,
                span,
                target.runtime,
                model_opset,
                target.detail,
            )
        notes = []
        if target.runtime == "trt":
            from deploylens.core.support.tensorrt_table import table_for

            used, _, warning = table_for(target.detail)
            notes.append(warning or f"TensorRT {used} operator table (onnx-tensorrt)")
        reports.append(TargetReport(target.label, not blockers, blockers, span, model_opset, notes,
                                    nodes=judged_nodes))  # fmt: skip
    return reports


RECURRENT = ("RNN", "GRU", "LSTM")


# Resize's documented attribute restrictions (onnx-tensorrt's table text) → the attribute and
# ONNX's default for it
RESIZE_RESTRICTIONS = {
    "resize transformation modes": ("coordinate_transformation_mode", "half_pixel"),
    "resize modes": ("mode", "nearest"),
    "nearest modes": ("nearest_mode", "round_prefer_floor"),
    "aspect ratio policy": ("keep_aspect_ratio_policy", "stretch"),
}


# Where onnx-tensorrt's table text lags its importer: (attribute, value) → the first release that
# imports it. Resize's cubic mode has been imported (kCUBIC) since 8.5 while every table up to
# 10.1 still lists "nearest, linear" only; TensorRT-RTX's live parser builds a cubic Resize.
IMPORTED_BEYOND_THE_TABLE = {("mode", "cubic"): (8, 5)}


def _imported_anyway(attr: str, value: Any, version: str) -> bool:
    since = IMPORTED_BEYOND_THE_TABLE.get((attr, value))
    if since is None:
        return False
    try:
        parts = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return False
    return parts >= since


def _attribute(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            value = onnx.helper.get_attribute_value(attribute)
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return default


def _trt_attribute_blockers(graphs: list[onnx.GraphProto], target: Target) -> list[Blocker]:
    """The documented restrictions that depend on a node's attributes, not its type: Resize's
    modes, its aspect-ratio policy and antialiasing (the super-resolution model's three Resize
    nodes were judged by op type alone)."""
    import re

    from deploylens.core.support.tensorrt_table import lookup, table_for

    used, table, _ = table_for(target.detail)
    row = lookup(table, "Resize") or {}
    text = row.get("restrictions", "")
    allowed = {
        attr: (default, re.findall(r"`([^`]+)`", match.group(1)))
        for phrase, (attr, default) in RESIZE_RESTRICTIONS.items()
        for match in [re.search(rf"Supported {phrase}: ([^<]*)", text)]
        if match
    }
    no_antialias = "Antialiasing is not supported" in text
    by_reason: dict[str, list[str]] = {}
    for graph in graphs:
        for node in graph.node:
            if node.op_type != "Resize" or node.domain not in ("", "ai.onnx"):
                continue
            for attr, (default, words) in allowed.items():
                value = _attribute(node, attr, default)
                if words and value not in words and not _imported_anyway(attr, value, used):
                    reason = (
                        f"TensorRT {used} documents Resize {attr} {', '.join(words)} only, "
                        f"not '{value}'"
                    )
                    by_reason.setdefault(reason, []).append(node.name or node.op_type)
            if no_antialias and _attribute(node, "antialias", 0):
                reason = f"TensorRT {used} documents that Resize antialiasing is not supported"
                by_reason.setdefault(reason, []).append(node.name or node.op_type)
    return [
        Blocker("Resize", len(names), names[:MAX_NODE_NAMES], reason, key=None)
        for reason, names in sorted(by_reason.items())
    ]


def opset_limit_blocker(
    verdict: Verdict, nodes: list[str], model_opset: int, target: str
) -> Blocker:
    """One model-level blocker for a model whose opset the release does not parse — not one
    per op type, each offered a plugin (a TensorRT plugin for Mul cannot lift an opset limit)."""
    assert verdict.parses is not None
    low, high = verdict.parses
    fix = Fix(
        1,
        "opset",
        f"Export at opset {high} or lower (torch.onnx.export(..., opset_version={high})), or "
        f"convert the model with onnx.version_converter.convert_version(model, {high}); "
        f"{target} parses opsets {low}-{high}.",
        settings=FixSettings(opset=high),
    )
    return Blocker(
        f"(model opset {model_opset})",
        len(nodes),
        nodes[:MAX_NODE_NAMES],
        verdict.reason,
        fixes=numbered([fix]),
    )


def _model_level_blockers(graphs: list[onnx.GraphProto], target: Target) -> list[Blocker]:
    """Known restrictions that depend on attributes or storage, not op type: ONNX Runtime CPU's
    and the documented TensorRT ones."""
    if target.runtime == "trt":
        return _trt_attribute_blockers(graphs, target)
    if target.runtime != "ort":
        return []
    found: list[Blocker] = []
    segmented = [t.name for g in graphs for t in g.initializer if t.HasField("segment")]
    segmented += [
        n.name or n.op_type
        for g in graphs
        for n in g.node
        for a in n.attribute
        if a.type == onnx.AttributeProto.TENSOR and a.t.HasField("segment")
    ]
    if segmented:
        found.append(
            Blocker(
                "(tensor storage)",
                len(segmented),
                segmented[:MAX_NODE_NAMES],
                "ONNX Runtime cannot load tensors stored in segments",
            )
        )
    if target.detail == "CPUExecutionProvider":
        batchwise = [
            n.name or n.op_type
            for g in graphs
            for n in g.node
            if n.op_type in RECURRENT and any(a.name == "layout" and a.i == 1 for a in n.attribute)
        ]
        if batchwise:
            found.append(
                Blocker(
                    "(RNN/GRU/LSTM layout=1)",
                    len(batchwise),
                    batchwise[:MAX_NODE_NAMES],
                    "ONNX Runtime's CPU recurrent kernels do not support "
                    "batchwise layout (layout=1)",
                )
            )
    return found


def workable_opsets(
    matrix: SupportMatrix, target: Target, uses: dict[tuple[str, str], _OpUse]
) -> list[int]:
    """Default-domain opsets at which every op of ``uses`` exists and runs on ``target``."""
    default = [(d, o) for d, o in uses if d == "ai.onnx"]
    if not default:
        return []
    top = matrix.max_opset.get("ai.onnx", 1)
    good = []
    for opset in range(1, top + 1):
        if all(_verdict(matrix, target, d, o, opset, None).ok for d, o in default):
            good.append(opset)
    return good


def report_dict(reports: list[TargetReport]) -> list[dict[str, Any]]:
    return [asdict(r) for r in reports]
