"""The architecture zoo as CI's slower tier (issue 43): every architecture of
``tests/helpers/zoo.py`` — tiny configs, random weights, built by the test — through both
exporters, validate (the right export PASSes, a copy with one weight perturbed FAILs, layer-wise
names no diverging node), support (live, measured, the 10.1 table) against a real TensorRT-RTX
parse, an ahead-of-time build against a plain ``tensorrt_rtx`` build, and surgery's fold
against onnxslim's. ``bench/zoo.py`` runs the same cells through the CLI and prints the table.

The checks live here; ``test_zoo_text.py`` and ``test_zoo_vision.py`` run them on two halves of
the zoo, so the two xdist workers of ``make test-slow`` take one each."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

import onnx
import pytest

from deploylens.core.errors import UserError
from deploylens.core.jobs import Worker
from deploylens.core.pytorch.source import parse_input, parse_spec
from tests.helpers import zoo_truth
from tests.helpers.perturb import perturb_first_weight
from tests.helpers.shared_exports import shared_folder
from tests.helpers.zoo import Architecture, spec_of

GENERIC = ("Failed to export the model with torch.export", "Failed to decompose the FX graph")


@pytest.fixture(scope="module")
def worker() -> Any:
    with Worker() as running:
        yield running


@pytest.fixture(scope="module")
def zoo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("zoo")
    return folder


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The measured matrix for the ops the zoo's exports use, measured once per test run (a
    file lock: both xdist workers ask) into the run's shared folder."""
    from deploylens.core.support import measure

    folder = shared_folder(tmp_path_factory) / "zoo-measured"
    folder.mkdir(exist_ok=True)
    patch = pytest.MonkeyPatch()
    patch.setenv("DEPLOYLENS_CACHE_DIR", str(folder))
    patch.setattr(measure, "QUICK_OPS", ZOO_OPS)
    try:
        with open(folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return measure.load_measured(quick=True)
    finally:
        patch.undo()


# Every op the zoo's exports hold (both exporters, opset 17-20), measured for the tier. A new
# architecture whose op is missing here is "not measured" in the tier — never a pass.
ZOO_OPS = (
    "Abs", "Add", "And", "ArgMax", "AveragePool", "BatchNormalization", "Cast", "Ceil", "Clip",
    "Concat", "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "CumSum", "Div",
    "Einsum", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements",
    "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "Greater", "GreaterOrEqual",
    "GroupNormalization", "HardSigmoid", "HardSwish", "Identity", "InstanceNormalization",
    "IsInf", "IsNaN", "LayerNormalization", "Less", "LessOrEqual", "Log", "MatMul", "Max",
    "MaxPool", "Min", "Mod", "Mul", "Neg", "NonZero", "Not", "Or", "Pad", "Pow", "Range",
    "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "Relu",
    "Reshape", "Resize", "RoiAlign", "ScatterElements", "ScatterND", "Shape", "Sigmoid", "Sin",
    "Size", "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Tile", "TopK",
    "Transpose", "Trilu", "Unsqueeze", "Where",
)  # fmt: skip


def _export(worker: Any, arch: Architecture, spec: str, exporter: str, out: Path) -> Any:
    from deploylens.core.export.request import ExportRequest
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.pytorch.source import grant_consent

    source = parse_spec(spec)
    source.inputs = [parse_input(text) for text in arch.inputs]
    if source.kind == "python":
        grant_consent(source.target)  # this test's config: a worker restarted now reads it
        # and the running worker's, which is the module's (started before the test's own)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DEPLOYLENS_CONFIG_DIR", worker.env["DEPLOYLENS_CONFIG_DIR"])
            grant_consent(source.target)
    request = ExportRequest(source, ExportSettings(exporter=exporter, output=str(out)))
    return worker.run_request(request.prepared())


def _validate(worker: Any, model: Path, spec: str, layerwise: bool = False) -> Any:
    from deploylens.core.validate.request import ValidateRequest

    request = ValidateRequest(path=str(model), torch=parse_spec(spec), layerwise=layerwise)
    return worker.run_request(request.prepared())


def check_architecture(arch: Architecture, root: Path, worker: Any, measured: Any) -> list[str]:
    """Every cell of one architecture; returns the wrong ones (empty: all right)."""
    spec = spec_of(arch, root)
    wrong: list[str] = []
    exported: dict[str, Path] = {}
    for exporter in arch.exporters:
        out = root / arch.name / f"{exporter}.onnx"
        result = _export(worker, arch, spec, exporter, out)
        verdict = result.verdict()
        if not result.ok:
            finding = result.findings[0]
            named = finding.operator or finding.source
            if not named or any(g in finding.message for g in GENERIC):
                wrong.append(f"export {exporter}: a refusal names no cause: {finding.message}")
            continue
        agrees, why = zoo_truth.independent_agreement(arch, spec, out)
        if (verdict.severity == "pass") != agrees:
            wrong.append(f"export {exporter}: said {verdict.word!r}, truth {why}")
        if agrees:
            exported[exporter] = out
    if arch.tie_prone and not exported:  # its verdicts were checked above: no export to go on
        return wrong
    if arch.no_right_export and exported:
        wrong.append(f"{', '.join(exported)} now writes a right model: no_right_export is stale")
    if not exported:  # the verdicts above were checked; a known truth is not a wrong verdict
        unexplained = not wrong and not arch.no_right_export
        return wrong + ["no exporter wrote a right model"] * unexplained
    for exporter, out in exported.items():
        wrong += _check_model(arch, spec, exporter, out, worker, measured)
    return wrong


def _check_model(
    arch: Architecture, spec: str, exporter: str, out: Path, worker: Any, measured: Any
) -> list[str]:
    from deploylens.core.support.analysis import analyze, parse_target
    from deploylens.core.support.collect import read_registries
    from deploylens.core.support.matrix import SupportMatrix
    from deploylens.core.support.measure import verdict as measured_verdict
    from deploylens.core.support.request import CollectRequest, TensorRTProbeRequest

    wrong = []
    feeds = _feeds(arch, spec, out)
    checked = _validate(worker, out, spec, layerwise=True)
    if checked.verdict().word != "PASS":
        first = checked.first_diverging
        wrong.append(f"validate {exporter}: {checked.verdict().word} "
                     f"{first.node if first else ''} {checked.problems}")  # fmt: skip
    broken = out.with_name(f"{exporter}.perturbed.onnx")
    node = perturb_first_weight(out, broken, feeds=feeds)
    if _validate(worker, broken, spec).verdict().exit_code != 1:
        wrong.append(f"validate {exporter}: a copy with {node} perturbed did not FAIL")
    parsed, why = zoo_truth.rtx_parse(out)
    live = worker.run_request(TensorRTProbeRequest(str(out), "tensorrt_rtx"))
    if bool(live.supported) != parsed:
        wrong.append(f"support trt-rtx {exporter}: said {live.supported}, parse {parsed} {why}")
    model = onnx.load(str(out), load_external_data=False)
    guess = measured_verdict(model, measured, "trt-build")
    if parsed and guess.ok is False:
        said = [(b.node, b.cell, b.message[:80]) for b in guess.blocked[:3]]
        wrong.append(f"support trt-rtx-measured {exporter}: BLOCKED {said}")
    if not parsed and guess.ok is True:
        wrong.append(f"support trt-rtx-measured {exporter}: OK where the parse fails ({why})")
    matrix = SupportMatrix(read_registries(worker.run_request(CollectRequest()).path))
    (table,) = analyze(model, matrix, [parse_target("trt-10.1")])
    if parsed and not table.ok:
        wrong.append(f"support trt-10.1 {exporter}: BLOCKED "
                     f"{[(b.op, b.reason[:80]) for b in table.blockers[:3]]}")  # fmt: skip
    if exporter == arch.exporters[0] or "dynamo" not in arch.exporters:
        wrong += _build_and_fold(out, feeds, parsed, worker, exporter)
    return wrong


def _build_and_fold(
    out: Path, feeds: dict[str, Any], parsed: bool, worker: Any, exporter: str
) -> list[str]:
    from deploylens.core.surgery.request import SurgeryRequest
    from deploylens.core.trt.profiles import parse_profile_args
    from deploylens.core.trt.request import BuildRequest
    from deploylens.core.trt.settings import BuildSettings

    wrong = []
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    truth = zoo_truth.rtx_build(out, shapes) if parsed else (False, "")
    lines = ["{}:{}/{}/{}".format(k, *(["x".join(map(str, s))] * 3)) for k, s in shapes.items()]
    settings = BuildSettings(compute_capabilities=["sm89"], profiles=parse_profile_args(lines))
    engine = out.with_suffix(".plan")
    try:
        request = BuildRequest(str(out), str(engine), settings, version="rtx")
        built = worker.run_request(request.prepared()).built
    except UserError:
        built = False
    if built != truth[0]:
        wrong.append(f"build {exporter}: tool {built}, raw tensorrt_rtx {truth}")
    folded = out.with_name(f"{exporter}.folded.onnx")
    from deploylens.core.surgery.steps import Step

    report = worker.run_request(
        SurgeryRequest(str(out), [Step(op="fold")], str(folded), check_tensorrt=False)
    )
    slim_path = out.with_name(f"{exporter}.slim.onnx")
    slim = zoo_truth.slim_fold(out, slim_path)
    ours = len(onnx.load(str(folded), load_external_data=False).graph.node)
    if ours > slim + max(2, slim // 20):
        wrong.append(f"fold {exporter}: {ours} nodes where onnxslim leaves {slim}")
    said_same = report.verdict().exit_code == 0
    if said_same != zoo_truth.same_outputs(out, slim_path, feeds):
        wrong.append(f"fold {exporter}: compare said {report.verdict().word!r}")
    return wrong


def _feeds(arch: Architecture, spec: str, model: Path) -> dict[str, Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    torch_model, example = zoo_truth._torch_model(arch, spec)
    return zoo_truth._inputs(torch_model, session, example)


def record(arch: Architecture, wrong: list[str], root: Path) -> None:
    """The cells' answer, beside the exports (a failing run leaves what it found)."""
    (root / f"{arch.name}.json").write_text(json.dumps({"wrong": wrong}, indent=1))
