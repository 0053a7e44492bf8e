"""The measured support matrix: probes generated from the installed ONNX schemas, asked of the
real TensorRT-RTX parser/builder and the real ONNX Runtime CPU provider in a worker, cached per
version set, and used to predict a whole model's verdict — checked against a real parse.

Only the crash-bisection test uses a stand-in: a worker whose death is simulated (named there),
since no probe crashes the installed parser on demand."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from deploylens.core.support import measure
from deploylens.core.support.measured_types import CellAnswer, LibraryAnswers, MeasuredMatrix
from deploylens.core.support.probes import Cell, generate
from tests.core.test_cli import DEPLOYLENS

SMALL = ("Relu", "Squeeze", "Mod")  # the probe sample these tests measure (Cast alone: 5,800)


def test_every_probe_is_a_valid_model_at_its_own_opset() -> None:
    probes = generate({"Relu", "Squeeze"})
    assert len(probes.probes) > 20
    for probe in probes.probes:
        model = onnx.load_from_string(probe.model)
        onnx.checker.check_model(model, full_check=True)
        (opset,) = [o.version for o in model.opset_import if o.domain == probe.cell.domain]
        assert opset == probe.cell.since
        node = model.graph.node[0]
        assert node.op_type == probe.cell.op
        declared = model.graph.input[0].type.tensor_type.elem_type
        assert TensorProto.DataType.Name(declared).lower() == probe.cell.dtype


def test_an_older_schema_gets_the_constant_as_its_attribute() -> None:
    """Squeeze took axes as an attribute before opset 13 and as an input from 13: both probes
    exist, each in its own schema's form."""
    by_key = generate({"Squeeze"}).by_key()
    old = onnx.load_from_string(by_key["ai.onnx::Squeeze::11::float"].model)
    new = onnx.load_from_string(by_key["ai.onnx::Squeeze::13::float"].model)
    assert [a.name for a in old.graph.node[0].attribute] == ["axes"]
    assert len(old.graph.node[0].input) == 1
    assert len(new.graph.node[0].input) == 2
    assert [i.name for i in new.graph.initializer] == [new.graph.node[0].input[1]]


def test_a_cast_cell_is_a_type_pair() -> None:
    keys = generate({"Cast"}).by_key()
    model = onnx.load_from_string(keys["ai.onnx::Cast::21::float16>float8e5m2"].model)
    (to,) = [a.i for a in model.graph.node[0].attribute if a.name == "to"]
    assert to == TensorProto.FLOAT8E5M2
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT8E5M2
    # QuantizeLinear's verdict hangs on its zero point's type as much: a pair too
    quantize = generate({"QuantizeLinear"}).by_key()["ai.onnx::QuantizeLinear::21::float>int16"]
    model = onnx.load_from_string(quantize.model)
    (zero_point,) = [t for t in model.graph.initializer if t.name == model.graph.node[0].input[2]]
    assert zero_point.data_type == TensorProto.INT16
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.INT16


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[MeasuredMatrix, Path]:
    """The sample measured once in a real worker, into a cache folder of the module's own
    (TensorRT-RTX required as by the ``rtx`` fixture: in CI its absence fails)."""
    import importlib.util

    from tests.conftest import REQUIRE_TRT_RTX

    if importlib.util.find_spec("tensorrt_rtx") is None:
        if REQUIRE_TRT_RTX:
            pytest.fail("tensorrt_rtx is not installed but DEPLOYLENS_REQUIRE_TRT_RTX=1")
        pytest.skip("tensorrt-rtx-cu12 is not installed (pip install -e .[trt])")
    cache = tmp_path_factory.mktemp("measured-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("DEPLOYLENS_CACHE_DIR", str(cache))
    patch.setattr(measure, "QUICK_OPS", SMALL)
    try:
        data = measure.load_measured(quick=True)
        again = measure.load_measured(quick=True)
    finally:
        patch.undo()
    assert data.cached is False and again.cached is True
    assert again.trt.cells == data.trt.cells  # read back strictly, cell by cell
    return data, cache


def test_cells_say_what_the_real_libraries_did(measured: tuple[MeasuredMatrix, Path]) -> None:
    data, _ = measured
    trt, ort = data.trt.cells, data.ort.cells
    assert data.trt.product == "TensorRT-RTX"
    assert data.trt.importers["Relu"] and not data.trt.importers["DeformConv"]
    assert data.trt.plugins is not None  # its registry, asked while measuring
    assert ("ROIAlign_TRT", "2") in {(p.name, p.version) for p in data.trt.plugins}
    assert trt["ai.onnx::Relu::14::float"].state == "builds"
    assert ort["ai.onnx::Relu::14::float"].state == "runs"
    refused = trt["ai.onnx::Squeeze::13::uint16"]  # a type TensorRT cannot hold
    assert refused.state == "parse-fails"
    assert refused.code and refused.message
    assert ort["ai.onnx::Squeeze::13::uint16"].state == "runs"
    harness = {"io-type", "needs-profile", "needs-gpu"}  # what a one-node probe cannot answer
    assert {c.state for c in trt.values()} <= {"builds", "parse-fails", "build-fails"} | harness
    io = [c for c in trt.values() if c.state == "io-type"]  # a type only inside a network
    assert io and all("datatype" in c.message for c in io)
    squeeze_axes = data.trt.runtime["ai.onnx::Squeeze::13::float"]  # axes at run time
    assert squeeze_axes.state == "parse-fails"
    assert trt["ai.onnx::Squeeze::13::float"].state == "builds"  # axes as a constant
    assert {c.state for c in ort.values()} <= {"runs", "loads", "run-fails", "session-fails"}
    assert set(trt) == set(ort) == {k for k in data.seeds if "@" not in k}
    assert set(data.trt.variants) == set(data.ort.variants) == set(data.variant_seeds)
    ops = {Cell.from_key(k).op for k in trt}
    assert ops == set(SMALL)


def _two_node_model(path: Path, dtype: int) -> Path:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Squeeze", ["r", "axes"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", dtype, [1, 4])],
        [helper.make_tensor_value_info("y", dtype, [4])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    onnx.save(model, path)
    return path


def test_a_model_verdict_from_the_cells_matches_a_real_parse(
    measured: tuple[MeasuredMatrix, Path], rtx: Any, tmp_path: Path
) -> None:
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    data, _ = measured
    adapter = TensorRTAdapter(rtx)
    for dtype in (TensorProto.FLOAT, TensorProto.INT8, TensorProto.INT64):
        path = _two_node_model(tmp_path / f"m{dtype}.onnx", dtype)
        guess = measure.predict(onnx.load(path), data, "trt-build")
        real = adapter.try_model(path.read_bytes())
        assert guess.ok is (real["state"] == "builds"), (dtype, guess, real)
        assert guess.nodes == 2
    # uint16: a type TensorRT cannot hold; Squeeze's measured cell says so before any parse
    path = _two_node_model(tmp_path / "u16.onnx", TensorProto.UINT16)
    guess = measure.predict(onnx.load(path), data, "trt-build")
    assert guess.ok is False
    assert [n.cell for n in guess.blocked] == ["ai.onnx::Squeeze::13::uint16"]
    assert adapter.try_model(path.read_bytes())["state"] == "parse-fails"


def test_an_op_outside_the_probed_domains_is_never_fine(
    measured: tuple[MeasuredMatrix, Path],
) -> None:
    data, _ = measured
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Mine", ["r"], ["y"], domain="my.ops"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("my.ops", 1)],
        ir_version=10,
    )
    guess = measure.predict(model, data, "ort-run")  # ONNX Runtime: a custom op's library?
    assert guess.ok is None
    assert [n.cell for n in guess.not_measured] == ["my.ops::Mine::0::none"]
    for level in ("trt-parse", "trt-build"):  # TensorRT looks it up in its registry: not there
        guess = measure.predict(model, data, level)
        assert guess.ok is False and [n.state for n in guess.blocked] == ["plugin-not-registered"]


def test_the_cli_prints_the_measured_row(measured: tuple[MeasuredMatrix, Path]) -> None:
    data, cache = measured
    env = {**os.environ, "DEPLOYLENS_CACHE_DIR": str(cache)}
    shown = subprocess.run(
        [DEPLOYLENS, "support", "--op", "Squeeze", "--measured", "--quick"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "measured: TensorRT-RTX" in shown.stdout
    assert "TensorRT-RTX [UNSUPPORTED_NODE]" in shown.stdout
    row = subprocess.run(
        [DEPLOYLENS, "support", "--op", "Squeeze", "--measured", "--quick", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    parsed = json.loads(row.stdout)
    cells = {(c["since"], c["dtype"]): c for c in parsed["cells"]}
    key = "ai.onnx::Squeeze::13::uint16"
    assert cells[(13, "uint16")]["tensorrt_rtx"] == asdict(data.trt.cells[key])
    summary = subprocess.run(
        [DEPLOYLENS, "support", "--measured", "--quick", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    figures = json.loads(summary.stdout)
    assert figures["cached"] is True
    assert sum(figures["tensorrt_rtx"].values()) == len(data.trt.cells)
    unknown = subprocess.run(
        [DEPLOYLENS, "support", "--op", "NoSuchOp", "--measured", "--quick"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert unknown.returncode == 1 and "no cells" in unknown.stdout


def test_a_probe_that_kills_the_worker_is_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """STAND-IN: the worker's death is simulated (``MeasureRequest.run`` raises the client's
    CRASHED failure whenever the deadly cell is in the batch); the halving is the real code."""
    from deploylens.core.support.request import MeasureRequest
    from deploylens.core.worker.client import CRASHED, JobFailure

    deadly = "ai.onnx::Relu::14::float"
    batches: list[list[str]] = []

    def run(self: MeasureRequest, python: Any = None, progress: Any = None) -> MeasuredMatrix:
        batches.append(list(self.keys))
        if deadly in self.keys:
            raise JobFailure(CRASHED, "the worker crashed (signal 11)")
        cells = {k: CellAnswer("builds") for k in self.keys}
        return MeasuredMatrix(LibraryAnswers(cells), LibraryAnswers(dict(cells)))

    monkeypatch.setattr(MeasureRequest, "run", run)
    keys = [f"ai.onnx::Relu::14::{t}" for t in ("double", "float", "float16", "int8", "int32")]
    found = measure._run(keys, [], None, None)
    assert found.trt.cells[deadly].state == found.ort.cells[deadly].state == "crashed"
    assert "signal 11" in found.trt.cells[deadly].message
    assert {k for k, c in found.trt.cells.items() if c.state == "builds"} == set(keys) - {deadly}
    assert len(batches) <= 2 * len(keys)


def test_a_measured_target_judges_a_model_without_a_parse(
    measured: tuple[MeasuredMatrix, Path], tmp_path: Path
) -> None:
    """``--target trt-rtx-measured``: the verdict from the cells, its source named; a node with
    no measured cell makes it inconclusive (exit 3, as every INCONCLUSIVE), never OK."""
    _, cache = measured
    env = {**os.environ, "DEPLOYLENS_CACHE_DIR": str(cache)}

    def support(path: Path, target: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DEPLOYLENS, "support", str(path), "--target", target, "--quick"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    fine = support(_two_node_model(tmp_path / "f.onnx", TensorProto.FLOAT), "trt-rtx-measured")
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "predicted from the measured cells: TensorRT-RTX 1." in fine.stdout
    assert "OK: every node's measured cell passes (2 nodes)" in fine.stdout
    blocked = support(_two_node_model(tmp_path / "u.onnx", TensorProto.UINT16), "trt-rtx-measured")
    assert blocked.returncode == 1
    assert (
        "BLOCKED" in blocked.stdout
        and "ai.onnx::Squeeze::13::uint16): parse-fails" in blocked.stdout
    )
    runs = support(_two_node_model(tmp_path / "u2.onnx", TensorProto.UINT16), "ort-cpu-measured")
    assert "ONNX Runtime CPU" in runs.stdout  # Relu has no uint16 schema: no cell, inconclusive
    assert runs.returncode == 3 and "INCONCLUSIVE" in runs.stdout
    # the panel's form of the same predictions: inconclusive is a field, never read from prose
    import onnx

    from deploylens.core.support.live import measured_report
    from deploylens.core.support.measure import verdict

    data, _ = measured
    unknown = verdict(onnx.load(tmp_path / "u2.onnx"), data, "ort-run")
    report = measured_report("ort-cpu (measured)", unknown, 13)
    assert not report.ok and report.inconclusive
    assert any(b.reason.startswith("not measured") for b in report.blockers)
    failing = measured_report("trt-rtx (measured)", verdict(onnx.load(tmp_path / "u.onnx"), data,
                                                            "trt-build"), 13)  # fmt: skip
    assert not failing.ok and not failing.inconclusive


def _mod_model(path: Path, dtype: int, fmod: int | None) -> Path:
    node = helper.make_node("Mod", ["a", "b"], ["y"])
    if fmod is not None:
        node.attribute.append(helper.make_attribute("fmod", fmod))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, dtype, [3]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", dtype, [3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.save(model, path)
    return path


def test_an_op_whose_answer_hangs_on_its_attributes_is_judged_by_its_own_variant(
    measured: tuple[MeasuredMatrix, Path], tmp_path: Path
) -> None:
    """Mod without fmod is refused on floats and runs on ints: one cell per type could not tell
    (a float Mod in the expanded Attention tests was predicted by the fmod=1 probe). Each class
    of types has its own variants; the prediction matches a real ONNX Runtime run."""
    import numpy as np
    import onnxruntime as ort

    data, _ = measured
    variants = [k for k in data.ort.variants if "::Mod::13::" in k]
    # a variant asked for alone (the driver cornering a crash by key) is still generated
    assert [p.key for p in generate({"Mod"}, {variants[0]}).probes] == [variants[0]]
    assert {k.split("::")[3].split("@")[0] for k in variants} <= {"float", "int64"}
    for dtype, fmod in ((TensorProto.FLOAT, None), (TensorProto.FLOAT, 1),
                        (TensorProto.INT64, None), (TensorProto.INT64, 1)):  # fmt: skip
        path = _mod_model(tmp_path / f"mod{dtype}_{fmod}.onnx", dtype, fmod)
        guess = measure.predict(onnx.load(path), data, "ort-run")
        feed = np.array([5, -7, 9], dtype=helper.tensor_dtype_to_np_dtype(dtype))
        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            session.run(None, {"a": feed, "b": feed - 2 * np.sign(feed)})
            ran = True
        except Exception:
            ran = False
        assert guess.ok is ran, (dtype, fmod, guess)
    refused = measure.predict(onnx.load(tmp_path / "mod1_None.onnx"), data, "ort-run")
    assert refused.blocked[0].cell == "ai.onnx::Mod::13::float@in=0,1;out=1"
    assert refused.blocked[0].state == "run-fails"
    row = measure.measured_row(data, "Mod")  # what ``support --op Mod --measured`` lists
    shown = {(v.since, v.dtype, v.signature): v.ort_cpu.state for v in row.variants}
    assert shown[(13, "float", "in=0,1;out=1")] == "run-fails"
    assert "fmod" not in row.text().split("attribute variants")[1].split("\n")[1]


def test_a_model_without_its_weights_is_not_measured_whatever_its_cells_say(
    measured: tuple[MeasuredMatrix, Path], rtx: Any, tmp_path: Path
) -> None:
    """Polygraphy's "weightless" models keep an initializer's shape and drop its data: every
    cell passed, the real parse fails on the initializer. Now the verdict says why it cannot
    tell, and so does a graph naming one output twice."""
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    data, _ = measured
    path = _two_node_model(tmp_path / "w.onnx", TensorProto.FLOAT)
    model = onnx.load(path)
    assert measure.predict(model, data, "trt-parse").ok is True
    weight = model.graph.initializer[0]
    weight.ClearField("int64_data")
    weight.ClearField("raw_data")
    guess = measure.predict(model, data, "trt-parse")
    assert guess.ok is None and "carry no data" in guess.not_measured[0].message
    from deploylens.core.support.live import measured_report  # the panel's rows for it

    guess.source = "measured cells"
    report = measured_report("trt-rtx (measured)", guess, 14)
    assert report.inconclusive and [b.op for b in report.blockers] == ["(model)"]
    assert TensorRTAdapter(rtx).try_model(model.SerializeToString())["state"] == "parse-fails"
    twice = onnx.load(path)
    twice.graph.value_info.extend(
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4])] * 2
    )
    assert (
        "'r' is declared twice" in measure.predict(twice, data, "ort-run").not_measured[0].message
    )


def test_a_measured_cache_is_read_strictly_and_a_broken_one_is_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is read into typed cells where it is read: a cell without a state was a
    ``KeyError`` in the Support panel's table; now it is one sentence, and ``load_measured``
    measures again (it is only a cache). The fresh measurement is a stand-in here (named):
    the probes themselves are tested above against the real libraries."""
    from deploylens.core.errors import UserError

    good = MeasuredMatrix(
        LibraryAnswers({"ai.onnx::Relu::14::float": CellAnswer("builds")}, product="TensorRT-RTX"),
        LibraryAnswers({"ai.onnx::Relu::14::float": CellAnswer("runs")}),
        versions={"probes": "quick", "target": "sm89"},
    )
    path = tmp_path / "measured.json"
    path.write_text(good.to_json())
    back = measure.read_measured(path)
    assert back.cached and back.trt.cells == good.trt.cells and back.ort.cells == good.ort.cells
    broken = good.to_dict()
    del broken["trt"]["cells"]["ai.onnx::Relu::14::float"]["state"]
    path.write_text(json.dumps(broken))
    with pytest.raises(UserError, match=r"cells\.ai\.onnx::Relu::14::float: 'state' is required"):
        measure.read_measured(path)
    path.write_text('{"trt": {"cels": {}}, "ort": {}, "versions": {}}')
    with pytest.raises(UserError, match="did you mean 'cells'"):
        measure.read_measured(path)
    path.write_text('{"ort": {}, "versions": {}}')  # a library's answers gone: not this cache
    with pytest.raises(UserError, match="lacks a library's answers"):
        measure.read_measured(path)
    path.write_bytes(b"{not json")
    with pytest.raises(UserError, match="not a readable measured cache"):
        measure.read_measured(path)
    monkeypatch.setattr(measure, "cache_path", lambda quick=False: path)
    monkeypatch.setattr(measure, "measure", lambda *args: good)  # STAND-IN for the probe run
    again = measure.load_measured(quick=True)
    assert again is good and measure.read_measured(path).trt.cells == good.trt.cells


def test_a_custom_op_the_registry_lacks_is_blocked_not_unknown() -> None:
    """A node of a domain TensorRT has no importers for is looked up as a plugin: where the
    registry (asked when measuring) has no creator of that name and no importer has it, the
    parse fails — predicted as blocked with why, not left inconclusive. A registered name, or
    one with a native importer, stays for a parse to tell; ONNX Runtime's levels are unchanged.
    The matrix here is made by the test (the probes are tested against the real libraries
    above; the real registry in test_tensorrt_rtx.py)."""
    from deploylens.core.support.result import RegisteredPlugin

    relu = {"ai.onnx::Relu::14::float": CellAnswer("builds")}
    data = MeasuredMatrix(
        LibraryAnswers(dict(relu), product="TensorRT-RTX", importers={"Relu": True},
                       plugins=[RegisteredPlugin("ROIAlign_TRT", "2")]),
        LibraryAnswers({"ai.onnx::Relu::14::float": CellAnswer("runs")}),
    )  # fmt: skip

    def model(op: str, domain: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            [
                helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node(op, ["r"], ["y"], domain=domain),
            ],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        )
        opsets = [helper.make_opsetid("", 14), helper.make_opsetid(domain, 1)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=10)

    custom = measure.predict(model("Tokenize", "ai.onnx.contrib"), data, "trt-parse")
    assert custom.ok is False
    (node,) = custom.blocked
    assert node.state == "plugin-not-registered" and "it holds: ROIAlign_TRT v2" in node.message
    for op, domain in (("ROIAlign_TRT", "trt.plugins"), ("Relu", "my.ops")):
        assert measure.predict(model(op, domain), data, "trt-build").ok is None, op
    assert measure.predict(model("Tokenize", "ai.onnx.contrib"), data, "ort-run").ok is None
    data.trt.plugins = None  # a cache measured before the registry was asked: no guess
    assert measure.predict(model("Tokenize", "ai.onnx.contrib"), data, "trt-parse").ok is None


def test_each_target_is_judged_in_its_own_states(measured: tuple[MeasuredMatrix, Path]) -> None:
    """A Constant feeding a node: ``ort-cpu-measured`` said BLOCKED "Constant_1 … builds — the
    parser imports its value as weights" (TensorRT's state applied to ONNX Runtime; held-out
    ONNX Runtime agreement fell to 83.5 %). Each target's nodes now carry that target's states
    only."""
    from deploylens.core.support.measured_types import STATES

    data, _ = measured
    axes = helper.make_tensor("v", TensorProto.INT64, [1], [0])
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["axes"], value=axes),
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Squeeze", ["r", "axes"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)
    for level, lib in (("ort-run", "ort"), ("trt-build", "trt")):
        found = measure.predict(model, data, level)
        assert found.ok is True and found.nodes == 3, (level, found)
        assert found.verdict().exit_code == 0
        assert {n.state for n in [*found.blocked, *found.not_measured]} <= set(STATES[lib])
    cells = {use.node: use for use in measure.model_cells(model)}
    answers = data.library("ort")
    _, said = measure.node_answer(cells["Constant_1"], "ort", answers, None, data, ("runs",))
    assert said is not None and said.state == "runs" and "ONNX Runtime" in said.message
