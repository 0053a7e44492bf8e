"""Graph surgery on exports the tests make: each built-in pattern rewrites a real TorchScript
export, the edited model matches the original within 1e-5 through ONNX Runtime (custom nodes
through the reference implementations), and TensorRT-RTX's real parser reads it (or names the
plugin it looked for). The generic steps, the steps file, the reproducer and bad input too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.errors import UserError
from deploylens.core.plugin_api import load_plugins
from deploylens.core.surgery import graph_ops
from deploylens.core.surgery.compare import compare_models
from deploylens.core.surgery.job import parser_verdict
from deploylens.core.surgery.patterns import (
    PLUGIN_DOMAIN,
    deform_from_trt,
    deform_to_trt,
    gelu,
    layernorm,
    minmax_clip,
)
from deploylens.core.surgery.result import SurgeryCompare
from deploylens.core.surgery.steps import (
    Step,
    apply_steps,
    reproducer_script,
    steps_from_toml,
    steps_to_toml,
)

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))


def plugins() -> list[Any]:
    return list(load_plugins()[0].values())


def export_block(path: Path, opset: int) -> Path:
    """Linear → LayerNorm → GELU → min/max clamp with tensor bounds, by the TorchScript exporter
    (below opset 17 it writes LayerNorm as ReduceMean/Sub/Pow/…, GELU as Div/Erf/Add/Mul/Mul)."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)
            self.norm = torch.nn.LayerNorm(16)
            self.act = torch.nn.GELU()
            self.register_buffer("lo", torch.tensor(-0.25))
            self.register_buffer("hi", torch.tensor(0.75))

        def forward(self, x: Any) -> Any:
            y = self.act(self.norm(self.fc(x)))
            lo, hi = self.get_buffer("lo"), self.get_buffer("hi")
            return torch.minimum(torch.maximum(y, lo), hi)

    torch.manual_seed(0)
    block = Block().eval()
    with torch.no_grad():  # a non-trivial affine so gamma/beta matter
        block.norm.weight.uniform_(0.5, 1.5)
        block.norm.bias.uniform_(-0.5, 0.5)
    torch.onnx.export(
        block,
        (torch.randn(2, 8, 16),),
        str(path),
        dynamo=False,
        opset_version=opset,
        input_names=["x"],
        output_names=["y"],
    )
    return path


def ops(model: onnx.ModelProto) -> list[tuple[str, str]]:
    return [(n.domain, n.op_type) for n in model.graph.node]


def edited(tmp_path: Path, original: Path, model: onnx.ModelProto, name: str) -> SurgeryCompare:
    out = tmp_path / name
    onnx.save(model, out)
    onnx.checker.check_model(model)
    result = compare_models(original, out, plugins())
    assert result.comparable and result.passed, result
    assert max(o.max_abs or 0.0 for o in result.outputs) <= 1e-5
    return result


@pytest.mark.parametrize("opset", [12, 16, 17])
def test_layernorm_gelu_and_clip_patterns_keep_the_numbers(
    opset: int, tmp_path: Path, rtx: Any
) -> None:
    original = export_block(tmp_path / f"block{opset}.onnx", min(opset, 16))
    if opset == 17:  # TorchScript writes LayerNormalization itself at 17: the opset-16 graph,
        model = onnx.load(original)  # valid at 17 too, stands for a decomposition made there
        model.opset_import[0].version = 17
        onnx.save(model, original)
    model = onnx.load(original)
    assert (
        ("", "ReduceMean") in ops(model) and ("", "Erf") in ops(model) and ("", "Max") in ops(model)
    )
    model, report = layernorm(model)
    assert report["matches"] == 1 and len(report["matched_nodes"][0]) == 9  # γ and β included
    want = ("", "LayerNormalization") if opset >= 17 else (PLUGIN_DOMAIN, "LayerNormalization")
    assert want in ops(model) and ("", "ReduceMean") not in ops(model)
    model, report = gelu(model)
    assert report["matches"] == 1 and (PLUGIN_DOMAIN, "Gelu") in ops(model)  # Gelu is opset 20
    model, report = minmax_clip(model)
    assert report["matches"] == 1 and ("", "Clip") in ops(model) and ("", "Max") not in ops(model)
    assert model.ir_version == onnx.load(original).ir_version  # ORT can still read it
    assert {o.domain for o in model.opset_import} == ({"", PLUGIN_DOMAIN})
    edited(tmp_path, original, model, f"edited{opset}.onnx")
    verdict = parser_verdict(str(tmp_path / f"edited{opset}.onnx"))
    assert verdict.module == "tensorrt_rtx" and verdict.parsed, verdict  # native layers


def test_gelu_at_opset_20_becomes_the_onnx_op(tmp_path: Path) -> None:
    """A decomposition built by hand in the other multiplication order, (x·0.5)·(1+erf(x/√2))."""
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["x", "half"], ["h"], name="half"),
        helper.make_node("Mul", ["h", "a"], ["y"], name="mul"),
    ]
    inits = [
        numpy_helper.from_array(np.array(v, np.float32), n)
        for n, v in (("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5))
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "g.onnx")
    rewritten, report = gelu(model)
    assert report["matches"] == 1 and ops(rewritten) == [("", "Gelu")]
    edited(tmp_path, tmp_path / "g.onnx", rewritten, "g2.onnx")


def test_min_then_max_with_crossed_bounds_is_not_a_clip() -> None:
    """max(min(x, -1), 1) is 1 everywhere; Clip(x, 1, -1) is -1: rewriting would be wrong."""
    nodes = [
        helper.make_node("Min", ["x", "lo"], ["m"], name="min"),
        helper.make_node("Max", ["m", "hi"], ["y"], name="max"),
    ]
    inits = [
        numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(1.0, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    rewritten, report = minmax_clip(model)
    assert report["matches"] == 0 and ops(rewritten) == [("", "Min"), ("", "Max")]


def test_deform_conv2d_becomes_tensorrts_plugin_node_and_back(tmp_path: Path, rtx: Any) -> None:
    original = tmp_path / "deform.onnx"
    export = subprocess.run(
        [
            DEPLOYLENS,
            "export",
            "sample:deform_conv",
            "--exporter",
            "torchscript",
            "--plugin",
            "deform_conv2d",
            "--out",
            str(original),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ.copy(),
    )
    assert export.returncode == 0, export.stderr[-1500:]
    model, report = deform_to_trt(onnx.load(original))
    assert report["matches"] == 1
    (node,) = [n for n in model.graph.node if n.op_type == "ModulatedDeformConv2d"]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert node.domain == PLUGIN_DOMAIN and attrs["plugin_version"] == b"1"
    assert list(attrs["padding"]) == [1, 1] and attrs["deformable_group"] == 1
    # no mask in the export: a mask of ones makes the modulated plugin compute the same thing
    edited(tmp_path, original, model, "deform_trt.onnx")
    verdict = parser_verdict(str(tmp_path / "deform_trt.onnx"))
    (finding,) = verdict.findings  # no such plugin ships in TensorRT-RTX: it says what it sought
    assert finding.op == "ModulatedDeformConv2d" and "Plugin not found" in finding.message
    # run_surgery hands over the proto it wrote instead of a second read: the same check
    assert parser_verdict(str(tmp_path / "deform_trt.onnx"), model) == verdict
    back, report = deform_from_trt(model)
    assert report["matches"] == 1 and ("custom", "deform_conv2d") in ops(back)
    edited(tmp_path, original, back, "deform_back.onnx")


def small_cnn(samples: Path) -> onnx.ModelProto:
    return onnx.load(samples / "small_cnn.torchscript.onnx")


def test_extract_gives_a_runnable_model_with_the_original_values(
    samples: Path, tmp_path: Path
) -> None:
    import onnxruntime as ort

    model = small_cnn(samples)
    inner = [n for n in model.graph.node if n.op_type == "Relu"]
    start, end = inner[0].output[0], inner[1].output[0]
    piece, report = graph_ops.extract(model, [start], [end])
    assert [i.name for i in piece.graph.input] == [start] and [
        o.name for o in piece.graph.output
    ] == [end]
    assert 0 < report["nodes_after"] < report["nodes_before"]
    onnx.checker.check_model(piece)
    # the original, asked for both tensors, agrees with the piece fed the first one
    probe = onnx.shape_inference.infer_shapes(model)
    values = {v.name: v for v in probe.graph.value_info}
    probe.graph.output.extend([values[start], values[end]])
    full = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    name = full.get_inputs()[0].name
    x = (
        np.random.default_rng(0)
        .standard_normal([d if isinstance(d, int) else 1 for d in full.get_inputs()[0].shape])
        .astype(np.float32)
    )
    a, b = full.run([start, end], {name: x})
    cut = ort.InferenceSession(piece.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(cut.run([end], {start: a})[0], b, atol=1e-6)
    with pytest.raises(UserError, match="not among the inputs"):
        graph_ops.extract(model, [], [end])  # the graph input is no longer bound
    # the surgery compare feeds the piece the original's own values of its input
    onnx.save(model, tmp_path / "whole.onnx")
    onnx.save(piece, tmp_path / "piece.onnx")
    result = compare_models(tmp_path / "whole.onnx", tmp_path / "piece.onnx", plugins())
    assert result.comparable and result.passed and result.fed_from_original == [start]
    assert [r.output for r in result.outputs] == [end]


def test_replace_refuses_a_set_that_is_not_one_piece_and_builds_a_plugin_node(
    samples: Path,
) -> None:
    model = small_cnn(samples)
    chain = [n.name for n in model.graph.node if n.op_type in ("Conv", "Relu")]
    with pytest.raises(UserError, match="not one piece"):
        graph_ops.replace_by_node(model, [chain[0], chain[2]], "X", "custom")  # Relu between
    first = next(n for n in model.graph.node if n.op_type == "Conv")
    relu = next(n for n in model.graph.node if first.output[0] in n.input)
    rewritten, report = graph_ops.replace_by_node(
        model, [first.name, relu.name], "ConvRelu", "my.plugins", {"plugin_version": "1"}, "fused"
    )
    node = next(n for n in rewritten.graph.node if n.op_type == "ConvRelu")
    assert node.domain == "my.plugins" and list(node.input) == list(first.input)
    assert list(node.output) == list(relu.output) and report["removed"] == [first.name, relu.name]
    assert ("my.plugins", 1) in {(o.domain, o.version) for o in rewritten.opset_import}
    onnx.checker.check_model(rewritten)


def test_dims_outputs_and_domains(samples: Path) -> None:
    model = small_cnn(samples)
    name = model.graph.input[0].name
    dynamic, _ = graph_ops.set_dims(model, {name: ["batch", 3, 32, 32]})
    dim = dynamic.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "batch"
    assert (
        dynamic.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    )  # inferred again
    with pytest.raises(UserError, match="rank"):
        graph_ops.set_dims(model, {name: [1, 3]})
    with pytest.raises(UserError, match="not graph outputs"):
        graph_ops.cut_outputs(model, ["nope"])
    custom = onnx.load(samples / "custom_fn_symbolic.torchscript.onnx")
    renamed, _ = graph_ops.rename_domain(
        custom,
        "custom_domain",
        PLUGIN_DOMAIN,
        "customOp2",
        "ScaledSoftsign",
        {"plugin_version": "1", "plugin_namespace": ""},
    )
    assert (PLUGIN_DOMAIN, "ScaledSoftsign") in ops(renamed)
    assert "custom_domain" not in {o.domain for o in renamed.opset_import}  # no node uses it now


def test_steps_file_reproducer_and_cli(tmp_path: Path, rtx: Any) -> None:
    original = export_block(tmp_path / "block.onnx", 12)
    steps_file = tmp_path / "steps.toml"
    steps_file.write_text(
        steps_to_toml(
            [
                Step(op="fold"),
                Step(op="pattern", pattern="layernorm"),
                Step(op="pattern", pattern="gelu"),
            ]
        )
    )
    assert [s.op for s in steps_from_toml(steps_file.read_text())] == ["fold", "pattern", "pattern"]
    out, script = tmp_path / "cli.onnx", tmp_path / "surgery.py"
    run = subprocess.run(
        [
            DEPLOYLENS,
            "surgery",
            str(original),
            "--steps",
            str(steps_file),
            "--pattern",
            "minmax_clip",
            "--out",
            str(out),
            "--script",
            str(script),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert (
        report["compare"]["passed"] and report["checker"] == "ok" and report["tensorrt"]["parsed"]
    )
    assert report["steps"][0]["step"].startswith("fold")
    # the reproducer (onnxslim + onnx-graphsurgeon) makes the same graph
    again = tmp_path / "again.onnx"
    text = script.read_text().replace(repr(str(out)), repr(str(again)))
    done = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ops(onnx.load(again)) == ops(onnx.load(out))
    # replaying the saved chain gives the same model
    saved = Path(report["steps_file"]).read_text()
    model, _ = apply_steps(onnx.load(original), steps_from_toml(saved))
    assert ops(model) == ops(onnx.load(out))
    assert "minmax_clip" in reproducer_script(str(original), str(out), steps_from_toml(saved))


def test_bad_steps_and_bad_models_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="patern"):
        steps_from_toml('[[steps]]\nop = "pattern"\npatern = "layernorm"\n')  # misspelt key
    with pytest.raises(UserError, match="unknown pattern"):
        steps_from_toml('[[steps]]\nop = "pattern"\npattern = "swish"\n')
    with pytest.raises(UserError, match="not valid TOML"):
        steps_from_toml("[[steps]\n")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07\x12\x05hello" + os.urandom(64))
    run = subprocess.run(
        [DEPLOYLENS, "surgery", str(broken), "--fold"], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr and "broken.onnx" in run.stderr
    assert not (tmp_path / "broken.edited.onnx").exists()


def test_a_rewrite_that_changes_the_numbers_fails_and_names_where(
    samples: Path, tmp_path: Path
) -> None:
    """A Relu replaced by a Gelu plugin node (it has a reference implementation, so it runs):
    the compare fails, names the first shared tensor that diverges, and the CLI exits 1."""
    model = tmp_path / "cnn.onnx"
    model.write_bytes((samples / "small_cnn.torchscript.onnx").read_bytes())
    relu = next(n for n in onnx.load(model).graph.node if n.op_type == "Relu")
    steps = tmp_path / "wrong.toml"
    steps.write_text(
        steps_to_toml([Step(op="replace", nodes=[relu.name], new_op="Gelu", domain=PLUGIN_DOMAIN)])
    )
    run = subprocess.run(
        [DEPLOYLENS, "surgery", str(model), "--steps", str(steps), "--json", "--no-tensorrt"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr[-2000:]
    compare = json.loads(run.stdout)["compare"]
    assert compare["passed"] is False and compare["layers"]
    assert compare["first_diverging"] == relu.output[0]  # the rewritten node's own output
    passed = [r["output"] for r in compare["layers"] if r["passed"]]
    assert passed and relu.output[0] not in passed  # tensors before the change still agree


def test_replace_with_inherited_attributes_and_its_reproducer(
    samples: Path, tmp_path: Path
) -> None:
    """The matched nodes' attributes ride along (conv_strides …) and the written
    onnx-graphsurgeon script makes the same node with the same attributes."""
    source = tmp_path / "cnn.onnx"
    source.write_bytes((samples / "small_cnn.torchscript.onnx").read_bytes())
    model = onnx.load(source)
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    relu = next(n for n in model.graph.node if conv.output[0] in n.input)
    step = Step(
        op="replace",
        nodes=[conv.name, relu.name],
        new_op="ConvRelu",
        domain="my.plugins",
        attrs={"plugin_version": "1"},
        inherit_attrs=True,
        name="fused",
    )
    edited, _ = apply_steps(model, [step])
    node = next(n for n in edited.graph.node if n.op_type == "ConvRelu")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    conv_attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    assert list(attrs["conv_strides"]) == list(conv_attrs["strides"])
    assert list(attrs["conv_kernel_shape"]) == list(conv_attrs["kernel_shape"])
    assert attrs["plugin_version"] == b"1"
    script = reproducer_script(str(source), str(tmp_path / "again.onnx"), [step])
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    again = next(
        n for n in onnx.load(tmp_path / "again.onnx").graph.node if n.op_type == "ConvRelu"
    )
    assert sorted(a.name for a in again.attribute) == sorted(attrs)
    assert list(again.input) == list(node.input) and list(again.output) == list(node.output)


def test_without_onnxslim_or_graphsurgeon_the_error_says_what_to_install(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged bundle leaves sympy out (onnxslim needs it): one sentence, not a traceback."""
    model = small_cnn(samples)
    monkeypatch.setitem(sys.modules, "onnxslim", None)  # import raises ImportError
    with pytest.raises(UserError, match="folding needs onnxslim") as raised:
        graph_ops.fold(model)
    assert "pip install onnxslim" in (raised.value.hint or "")
    monkeypatch.setitem(sys.modules, "onnx_graphsurgeon", None)
    with pytest.raises(UserError, match="needs onnx-graphsurgeon"):
        graph_ops.cut_outputs(model, [model.graph.output[0].name])


def test_an_output_the_original_never_computes_is_not_a_pass(tmp_path: Path) -> None:
    """Edited model with one output matching and one the original has no tensor for: the one
    that matches must not carry a PASS over the one nobody checked."""

    def model(outputs: list[str]) -> onnx.ModelProto:
        nodes = [
            helper.make_node("Relu", ["x"], ["a"]),
            helper.make_node("Neg", ["x"], [outputs[1]]),
        ]
        graph = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in outputs],
        )
        made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        made.ir_version = 8
        return made

    onnx.save(model(["a", "b"]), tmp_path / "original.onnx")
    onnx.save(model(["a", "renamed"]), tmp_path / "edited.onnx")
    result = compare_models(tmp_path / "original.onnx", tmp_path / "edited.onnx", plugins())
    assert result.comparable and result.passed is None
    assert result.uncompared == ["renamed"] and "renamed" in result.reason
    from deploylens.core.surgery.result import GraphDiff, SurgeryResult

    report = SurgeryResult(model="o", output="e", steps_file="s", steps=[], kept=[], skipped=[],
                           nodes_before=2, nodes_after=2, diff=GraphDiff([], [], []),
                           checker="ok", compare=result)  # fmt: skip
    text = report.summary()
    assert "NOT CHECKED" in text and "PASS" not in text
    # an edit whose outputs could not all be compared claims nothing: INCONCLUSIVE (exit 3)
    assert report.verdict().severity == "warn" and report.verdict().exit_code == 3
    assert "renamed" in report.verdict().word


def test_a_pattern_that_matched_nothing_is_not_a_step(tmp_path: Path) -> None:
    """A chain kept a pattern that matched nothing as a step (and wrote an unchanged model for a
    chain of only that). It is now said and left out of the saved steps; alone, nothing is
    written and the error says why."""
    from deploylens.core.surgery.job import run_surgery
    from deploylens.core.surgery.request import SurgeryRequest

    original = export_block(tmp_path / "block.onnx", 12)
    steps = [Step(op="fold"), Step(op="pattern", pattern="deform_to_trt")]  # no DeformConv here
    out = tmp_path / "edited.onnx"
    report = run_surgery(SurgeryRequest(str(original), steps, str(out), compare=False,
                                        check_tensorrt=False))  # fmt: skip
    assert report.kept == [0] and report.skipped == ["pattern deform_to_trt"]
    assert [s.op for s in steps_from_toml(Path(report.steps_file).read_text())] == ["fold"]
    alone = tmp_path / "alone.onnx"
    with pytest.raises(UserError, match=r"matched nothing in block\.onnx: nothing was written"):
        run_surgery(SurgeryRequest(str(original), steps[1:], str(alone), compare=False,
                                   check_tensorrt=False))  # fmt: skip
    assert not alone.exists()


def test_a_replace_or_fold_keeps_the_groups_of_the_untouched_nodes(samples: Path) -> None:
    """onnx-graphsurgeon and onnxslim drop node metadata, so one replace flattened a dynamo
    export's whole hierarchy in the Graph panel. Untouched nodes keep their name scopes; the
    replacement node takes the scope of the node it replaced."""
    from deploylens.core.graph.hierarchy import NAME_SCOPES_KEY
    from deploylens.core.graph.ir import build_model_ir

    model = onnx.load(samples / "small_cnn.dynamo.onnx")

    def scopes(m: onnx.ModelProto) -> dict[str, str]:
        return {n.name: p.value for n in m.graph.node for p in n.metadata_props
                if p.key == NAME_SCOPES_KEY}  # fmt: skip

    before = scopes(model)
    target = model.graph.node[2].name
    for steps in ([Step(op="fold")],
                  [Step(op="replace", nodes=[target], new_op="MyOp", domain="custom",
                        name="my_op")]):  # fmt: skip
        edited, _ = apply_steps(model, steps)
        after = scopes(edited)
        untouched = set(after) & set(before)
        assert untouched and all(after[n] == before[n] for n in untouched)
        assert build_model_ir(edited).hierarchy == "name_scopes"
    assert after["my_op"] == before[target]


def test_the_pattern_names_the_cli_checks_are_the_patterns_there_are() -> None:
    """The CLI and steps files check ``--pattern`` against core/surgery/pattern_names.py (onnx
    stays out of the CLI process); the rewrites themselves live in patterns.py."""
    from deploylens.core.surgery.pattern_names import PATTERN_NAMES
    from deploylens.core.surgery.patterns import PATTERNS

    assert tuple(PATTERNS) == PATTERN_NAMES


def test_the_checker_fails_an_edit_only_for_what_the_edit_broke() -> None:
    """An edit onnx.checker rejects fails (exit 1) when the original passed it; when the
    original fails the same check, the edit is not blamed for it."""
    from deploylens.core.surgery.result import GraphDiff, SurgeryCompare, SurgeryResult, TensorCheck

    matched = SurgeryCompare(
        comparable=True, passed=True, outputs=[TensorCheck("y", True, "", 0.0)]
    )

    def verdict(checker: str, original: str) -> tuple[str, int]:
        found = SurgeryResult(model="o", output="e", steps_file="s", steps=[], kept=[], skipped=[],
                              nodes_before=2, nodes_after=2, diff=GraphDiff([], [], []),
                              checker=checker, checker_original=original,
                              compare=matched).verdict()  # fmt: skip
        return found.severity, found.exit_code

    assert verdict("ok", "") == ("pass", 0)
    assert verdict("Field 'shape' of 'type' is required", "ok") == ("fail", 1)
    assert verdict("Field 'shape' of 'type' is required", "Field 'shape' …") == ("pass", 0)
