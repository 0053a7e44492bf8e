"""Which layers must stay out of INT8 (or FP16): one calibration, then per quantizable node the
model's error with only that node in lower precision and with everything but that node in it;
the nodes ranked; a greedy curve of the error against how many of the most sensitive nodes stay
in FP32; the plan that meets a budget — as a Q/DQ (or FP16) model, TensorRT ≤ 10 layer settings
and a calibration cache — and, for FP16, which activations cannot be held in FP16 at all.

Every variant reuses the one calibration's scales (``core/quantize/mixed.py``): nothing is
recalibrated per layer, which is what makes a per-node sweep affordable (bench/sensitivity.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from deploylens.core import typed
from deploylens.core.data.arrays import read_labels
from deploylens.core.errors import UserError
from deploylens.core.quantize.prefix import PrefixCache
from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest
from deploylens.core.results import Evidence, Result, Verdict, judged

FP16_MAX = 65504.0
FP16_MIN_NORMAL = 6.103515625e-05
METRICS = ("relL2", "cosine", "top1")
DEFAULT_BUDGET = {"relL2": 0.02, "cosine": 0.999, "top1": 0.99}
CURVE_LIMIT = 40  # greedy points at most (each is one model variant and one evaluation)


@dataclass
class Score:
    """One variant against FP32 on the evaluation samples."""

    rel_l2: float
    cosine: float
    top1: float | None  # agreement with FP32's argmax, or accuracy when labels are given

    def value(self, metric: str) -> float:
        return {"relL2": self.rel_l2, "cosine": self.cosine, "top1": self.top1}[metric] or 0.0

    def error(self, metric: str) -> float:
        """Lower is better whatever the metric (1 − cosine, 1 − top-1)."""
        return self.rel_l2 if metric == "relL2" else 1.0 - self.value(metric)


@dataclass
class NodeSensitivity:
    node: str
    op: str
    only: Score  # only this node in lower precision
    all_but: Score  # everything but this node in lower precision
    rank: int = 0


@dataclass
class CurvePoint:
    """The whole model with the ``kept`` most sensitive nodes in FP32."""

    kept: int
    nodes: list[str]
    score: Score


@dataclass
class Plan:
    kept: list[str]  # the nodes kept in FP32
    met: bool  # False: the best point found, which misses the budget
    score: Score


@dataclass
class RangeFact:
    """A tensor FP16 cannot hold (it overflows, or it is below FP16's smallest normal)."""

    tensor: str
    node: str
    peak: float
    why: str
    advice: str


@dataclass
class PlanFiles:
    """What ``write_plan`` wrote in the output folder."""

    model: str  # the mixed-precision model
    settings: str  # TensorRT ≤ 10 build settings
    curve: str  # the PNG
    report: str  # this report as JSON
    calibration_cache: str = ""  # INT8 only

    def named(self) -> dict[str, str]:
        return {k: v for k, v in typed.to_dict(self).items() if v}


@dataclass
class Report(Result):
    """The ``quantize.sensitivity`` job's typed result: every node ranked, the error-vs-kept
    curve, the plan and the files written for it."""

    FILES = ("files.model", "files.settings", "files.curve", "files.report",
             "files.calibration_cache")  # fmt: skip

    model: str
    precision: str
    method: str
    metric: str
    budget: float
    samples: int
    fp32: Score
    full: Score  # every quantizable node in lower precision
    nodes: list[NodeSensitivity]
    curve: list[CurvePoint]
    plan: Plan
    range_facts: list[RangeFact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    per_node_s: float = 0.0  # both variants of a node
    only_s: float = 0.0  # the one-node-at-a-time variant of a node, on its own
    files: PlanFiles | None = None
    build: Verdict | None = None  # ``--build``: the build job's own verdict on the plan's model

    def verdict(self) -> Verdict:
        """The CLI's exit code and the panel's banner: a plan that misses the budget, or a
        ``--build`` of it that failed, is a failure (exit 1), never a printed aside."""
        plan, metric = self.plan, self.metric
        score = {"relL2": plan.score.rel_l2, "cosine": plan.score.cosine,
                 "top1": plan.score.top1}[metric]  # fmt: skip
        reached = "n/a" if score is None else f"{score:.4g}"
        kept = f"{len(plan.kept)} node(s) kept in FP32 → {metric} {reached}"
        scored = score is not None and math.isfinite(score) and self.samples > 0
        evidence = Evidence(
            self.samples if scored else 0,
            "evaluation sample(s) scored",
            "" if scored else f"the plan's {metric} is {reached} on {self.samples} sample(s)",
        )
        if not plan.met:
            return judged(
                evidence,
                f"FAIL: no plan meets the budget {self.budget:g}; the best found has {kept}.",
                "fail",
            )
        if self.build is not None and self.build.failed:
            return judged(
                evidence,
                f"FAIL: the plan ({kept}) did not build with TensorRT-RTX: {self.build.word}",
                "fail",
            )
        return judged(
            evidence, f"PASS: the plan has {kept}, within the budget {self.budget:g}.", "pass"
        )

    def summary(self) -> str:
        """The analysis as ``deploylens sensitivity`` prints it."""
        metric = self.metric

        def value(score: Score) -> str:
            number = {"relL2": score.rel_l2, "cosine": score.cosine, "top1": score.top1}[metric]
            return "n/a" if number is None else f"{number:.4g}"

        precision = self.precision.upper()
        lines = [
            f"{precision} sensitivity of {self.model} ({self.method} calibration, {self.samples} "
            f"evaluation samples, {metric}; {self.seconds:.1f} s, {self.per_node_s:.2f} s per "
            "node)",
            f"  FP32 {value(self.fp32)}; everything {precision} {value(self.full)}",
            f"  {'rank':>4s}  {'node':40s} {'op':8s} {'only it':>10s} {'all but it':>11s}",
        ]
        for row in self.nodes[:25]:
            lines.append(
                f"  {row.rank:>4d}  {row.node[:40]:40s} {row.op[:8]:8s} "
                f"{value(row.only):>10s} {value(row.all_but):>11s}"
            )
        plan = self.plan
        met = "meets" if plan.met else "is the best found but does NOT meet"
        lines.append(
            f"  plan: {len(plan.kept)} node(s) kept in FP32 → {metric} {value(plan.score)}, "
            f"{met} the budget {self.budget:g}"
        )
        if plan.kept:
            lines.append("    " + ", ".join(plan.kept))
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  range: {f.tensor} ({f.node}) {f.why}: {f.advice}" for f in self.range_facts]
        if self.files is not None:
            lines += [f"  {name}: {path}" for name, path in self.files.named().items()]
        if self.build is not None:
            built = self.build.severity != "fail"
            lines.append(f"  TensorRT-RTX: {'' if built else 'not built — '}{self.build.word}")
        return "\n".join(lines)


@dataclass
class PlanModel:
    """The plan as a model and the calibration ranges it was made from (written, not sent)."""

    model: onnx.ModelProto
    ranges: dict[str, tuple[float, float]]


class Evaluator:
    """FP32's outputs once, then any variant's score on the same samples."""

    def __init__(self, model: str, feeds: list[dict[str, np.ndarray]], labels: np.ndarray | None,
                 threads: int = 0) -> None:  # fmt: skip
        import onnxruntime as ort

        self.feeds = feeds
        self.options = ort.SessionOptions()
        # Q/DQ pairs computed as written, never fused into integer kernels: which patterns ORT
        # fuses depends on what else reads a tensor (a part cut out of a variant fused
        # differently from the whole variant in ORT 1.32, its score 1e-4 off), and TensorRT
        # does not fuse as ORT does either — the simulation is the same in every variant
        self.options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        self.options.intra_op_num_threads = threads
        self.options.log_severity_level = 3
        self.reference = self._outputs(model)
        self.samples = int(self.reference.shape[0])
        if labels is not None and labels.shape[0] < self.samples:
            raise UserError(
                f"--labels has {labels.shape[0]} labels for {self.samples} evaluation samples."
            )
        self.labels = labels[: self.samples] if labels is not None else None

    def _outputs(self, model: str | bytes) -> np.ndarray:
        import onnxruntime as ort

        session = ort.InferenceSession(model, self.options, providers=["CPUExecutionProvider"])
        return np.concatenate(
            [np.asarray(session.run(None, feed)[0], np.float64) for feed in self.feeds]
        )

    def score(self, model: onnx.ModelProto | str) -> Score:
        outputs = self._outputs(
            model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
        )
        return self._compare(outputs)

    def _compare(self, outputs: np.ndarray) -> Score:
        ref, got = self.reference.reshape(-1), outputs.reshape(-1)
        norm = float(np.linalg.norm(ref)) or 1.0
        rel_l2 = float(np.linalg.norm(got - ref)) / norm
        cosine = float(np.dot(got, ref) / ((np.linalg.norm(got) or 1.0) * norm))
        top1 = None
        if outputs.ndim == 2 and outputs.shape[1] > 1:
            truth = self.labels if self.labels is not None else self.reference.argmax(axis=1)
            top1 = float((outputs.argmax(axis=1) == truth).mean())
        return Score(rel_l2, cosine, top1)

    def fp32(self) -> Score:
        return self._compare(self.reference)

    def score_changed(
        self, model: onnx.ModelProto, changed: list[str], cache: PrefixCache | None
    ) -> Score:
        """``model``'s score, running only what ``changed`` affects when ``cache`` holds the
        base's tensors at that frontier (core/quantize/prefix.py); else the whole model."""
        sub = cache.submodel(model, changed) if cache is not None else None
        if cache is None or sub is None:
            return self.score(model)
        import onnxruntime as ort

        session = ort.InferenceSession(
            sub.SerializeToString(), self.options, providers=["CPUExecutionProvider"]
        )
        return self._compare(
            np.concatenate(
                [np.asarray(session.run(None, f)[0], np.float64) for f in cache.feeds(sub)]
            )
        )


def eval_feeds(request: SensitivityRequest) -> list[dict[str, np.ndarray]]:
    import onnxruntime as ort

    from deploylens.core.data.feeds import feed_batches, take_samples

    session = ort.InferenceSession(request.model, providers=["CPUExecutionProvider"])
    source = request.eval_data or request.data
    feeds = take_samples(feed_batches(session, source, preprocess=request.preprocess),
                         request.evaluate)  # fmt: skip
    if not feeds:
        raise UserError(f"{source} gave no evaluation samples.")
    return feeds


def default_budget(request: SensitivityRequest, fp32: Score) -> float:
    """The user's budget, else per metric; top-1 accuracy against labels: within one point of
    FP32's own (an absolute 0.99 would be unreachable for a 94% model)."""
    if request.budget is not None:
        return request.budget
    if request.metric == "top1" and request.labels and fp32.top1 is not None:
        return round(fp32.top1 - 0.01, 6)
    return DEFAULT_BUDGET[request.metric]


def meets(score: Score, metric: str, budget: float) -> bool:
    value = score.value(metric)
    return value <= budget if metric == "relL2" else value >= budget


def run_sensitivity(request: SensitivityRequest, progress: Any, workdir: Path) -> Report:
    """The analysis alone (``analyse`` without the plan's model)."""
    return analyse(request, progress, workdir)[0]


def analyse(request: SensitivityRequest, progress: Any, workdir: Path) -> tuple[Report, PlanModel]:
    from deploylens.core.quantize.calibrate import (
        collect_ranges,
        few_samples_note,
        load_ranges,
        write_qdq,
    )
    from deploylens.core.quantize.mixed import (
        QUANTIZABLE,
        fp16_variant,
        keep_float,
        quantize_only,
        quantized_nodes,
        reads_input,
    )

    if request.metric not in METRICS:
        raise UserError(f"Unknown metric '{request.metric}'; use {', '.join(METRICS)}.")
    started = time.perf_counter()
    labels = read_labels(request.labels) if request.labels else None
    progress(0.01, "evaluation samples and FP32 outputs")
    evaluator = Evaluator(request.model, eval_feeds(request), labels, request.threads)
    budget = default_budget(request, evaluator.fp32())
    method = request.method if request.precision == "int8" else "minmax"  # FP16: plain ranges
    calibration = CalibrateRequest(
        request.model, request.data, method=method,
        percentile=request.percentile, preprocess=request.preprocess,
        batch_size=request.batch_size, batches=request.batches,
    )  # fmt: skip
    calibrated = collect_ranges(calibration, workdir, lambda f, m: progress(0.02 + 0.18 * f, m))
    prepared = onnx.load(calibrated.prepared)
    facts: list[RangeFact] = []
    reusable: set[str] = set()  # nodes whose variants run only their changed part
    below: PrefixCache | None = None  # FP32's tensors, for the one-node variants
    above: PrefixCache | None = None  # the full Q/DQ model's, for the all-but-one variants
    if request.precision == "int8":
        progress(0.21, "the full Q/DQ model")
        write_qdq(calibrated, workdir / "full.qdq.onnx", calibration)
        qdq = onnx.load(workdir / "full.qdq.onnx")
        nodes = quantized_nodes(qdq)

        def lowered(chosen: list[str]) -> onnx.ModelProto:
            return quantize_only(qdq, prepared, chosen)

        def kept(chosen: list[str]) -> onnx.ModelProto:
            return keep_float(qdq, prepared, chosen)

        full = qdq
        if request.reuse_prefix and nodes:
            progress(0.215, "kept tensors of FP32 and of the full Q/DQ model")
            below, above = PrefixCache(prepared, quantized=False), PrefixCache(qdq, quantized=True)
            # compute nodes only: a frontier asked of the cached run stops ORT's Q/DQ fusions
            # there, and one cut at a Relu's or MaxPool's input changed the values a Conv's
            # part was fed (its score drifted 1e-4 from the whole variant's)
            reusable = {n.name for n in qdq.graph.node if n.op_type in QUANTIZABLE}
            for node in (n for n in nodes if n in reusable):
                below.plan(lowered([node]), [node])
                above.plan(kept([node]), [node])
            below.fill(evaluator.feeds, evaluator.options)
            above.fill(evaluator.feeds, evaluator.options)
    else:
        nodes = [n.name for n in prepared.graph.node if n.op_type in QUANTIZABLE and n.name]
        every = [n.name for n in prepared.graph.node if n.name]
        facts = fp16_range_facts(load_ranges(calibrated.ranges_path), prepared)

        def lowered(chosen: list[str]) -> onnx.ModelProto:
            return fp16_variant(prepared, [n for n in every if n not in chosen])

        def kept(chosen: list[str]) -> onnx.ModelProto:
            return fp16_variant(prepared, chosen)

        full = fp16_variant(prepared, [])
    if not nodes:
        raise UserError(
            f"{Path(request.model).name} has no {request.precision.upper()} candidates among "
            f"{', '.join(QUANTIZABLE)} nodes."
        )
    ops = {n.name: n.op_type for n in prepared.graph.node}
    fp32, full_score = evaluator.fp32(), evaluator.score(full)
    rows = []
    per_node_started, only_s = time.perf_counter(), 0.0
    for number, node in enumerate(nodes):
        progress(0.22 + 0.5 * number / len(nodes), f"node {number + 1}/{len(nodes)}: {node}")
        started = time.perf_counter()
        reuse = node in reusable
        only = evaluator.score_changed(lowered([node]), [node], below if reuse else None)
        only_s += time.perf_counter() - started
        rest = evaluator.score_changed(kept([node]), [node], above if reuse else None)
        rows.append(NodeSensitivity(node, ops.get(node, ""), only, rest))
    per_node_s = (time.perf_counter() - per_node_started) / len(nodes)
    # most sensitive first; ties (top-1 moves in steps of one sample) broken by rel L2
    rows.sort(key=lambda r: (-r.only.error(request.metric), -r.only.rel_l2))
    for rank, row in enumerate(rows, 1):
        row.rank = rank
    curve: list[CurvePoint] = []
    chosen: int | None = None
    ranked = [r.node for r in rows]
    last = min(len(ranked), CURVE_LIMIT - 1)
    for k in range(last + 1):
        progress(0.72 + 0.25 * k / min(len(ranked) + 1, CURVE_LIMIT), f"plan: {k} node(s) kept")
        score = full_score if k == 0 else evaluator.score(kept(ranked[:k]))  # whole: the plan
        curve.append(CurvePoint(k, ranked[:k], score))
        if chosen is None and meets(score, request.metric, budget):
            chosen = k
        if chosen is not None and k >= chosen + 2:  # the budget is met: two more for the curve
            break
    if chosen is None and last < len(ranked):  # every candidate kept: the FP32 model again
        curve.append(CurvePoint(len(ranked), ranked, evaluator.score(kept(ranked))))
        if meets(curve[-1].score, request.metric, budget):
            chosen = len(curve) - 1
    if chosen is None:  # not met: the best point the curve found, said as such
        chosen = min(range(len(curve)), key=lambda i: curve[i].score.error(request.metric))
        met = False
    else:
        met = True
    plan_nodes = curve[chosen].nodes
    plan = Plan(plan_nodes, met, curve[chosen].score)
    progress(0.98, "the plan's model")
    plan_model = kept(plan_nodes) if plan_nodes else full
    report = Report(
        model=request.model, precision=request.precision, method=calibration.method,
        metric=request.metric, budget=budget, samples=evaluator.samples, fp32=fp32,
        full=full_score, nodes=rows, curve=curve, plan=plan,
        range_facts=facts, seconds=time.perf_counter() - started, per_node_s=per_node_s,
        only_s=only_s / len(nodes), notes=few_samples_note(calibrated.samples),
    )  # fmt: skip
    if request.precision == "int8":
        report.notes += input_range_notes(rows, reads_input(qdq), calibration.method, request)
    return report, PlanModel(plan_model, load_ranges(calibrated.ranges_path))


def input_range_notes(
    rows: list[NodeSensitivity], inputs: dict[str, str], method: str, request: SensitivityRequest
) -> list[str]:
    """Where the most costly node to quantize is one that reads a network input through its
    Q/DQ pair, the input's INT8 range — a calibration choice made on raw data — is what costs:
    said, with the choices that change it."""
    if not rows or rows[0].node not in inputs:
        return []
    top = rows[0]
    error = top.only.error(request.metric)
    others = [m for m in ("minmax", "percentile", "entropy") if m != method]
    return [
        f"the network input '{inputs[top.node]}' drives the error: quantizing only "
        f"{top.node}, which reads it through its INT8 range, costs {request.metric} {error:.4g} "
        f"— that range comes from {method} calibration on the raw input; try --method "
        f"{' or '.join(others)}, or keep {top.node} in FP32 (the plan does when it must)"
    ]


def fp16_range_facts(
    ranges: dict[str, tuple[float, float]], model: onnx.ModelProto
) -> list[RangeFact]:
    """Activations FP16 cannot hold, from the calibration's min/max: beyond ±65504 (overflow to
    inf) or all below FP16's smallest normal (denormal or zero) → keep their producer in FP32."""
    producer = {o: n.name for n in model.graph.node for o in n.output}
    facts: list[RangeFact] = []
    for tensor, (low, high) in sorted(ranges.items()):
        peak = max(abs(low), abs(high))
        if peak > FP16_MAX:
            why = f"reaches {peak:.4g}, beyond FP16's ±65504 (it would overflow to inf)"
        elif 0 < peak < FP16_MIN_NORMAL:
            why = f"never exceeds {peak:.3g}, below FP16's smallest normal 6.1e-5"
        else:
            continue
        facts.append(RangeFact(tensor, producer.get(tensor, ""), peak, why, "keep in FP32"))
    return facts
