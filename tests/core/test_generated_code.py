"""Every script DeployLens writes emits values as literals: a hostile string in any field (a
newline, quotes, triple quotes, ``$()``, a line separator, text that is not UTF-8) or a float
Python cannot spell stays a value. Each generated file parses, holds the same statements and
names as the same script made from plain values, and running the surgery reproducer made from a
hostile model name and hostile node names writes the same model as the tool and no marker."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.codegen import comment, literal
from deploylens.core.export.fixit import _symbolic_code, _translation_code
from deploylens.core.export.settings import ExportSettings, python_script
from deploylens.core.pytorch.source import InputSpec, ModelSource
from deploylens.core.requests import REQUESTS, Request, request_class
from deploylens.core.surgery.steps import Step, apply_steps, reproducer_script
from deploylens.core.trt.script import build_script
from deploylens.core.trt.settings import BuildSettings, Calibration, Profile

MARKER = "deploylens-codegen-marker"


def payloads(marker: Path) -> list[str]:
    """Strings that end a string, a comment or a line in a naive generator, each trying to
    touch ``marker``."""
    run = f"__import__('os').system('touch {marker}')"
    return [
        f"x\n{run}\n",
        f"x'\n{run}#",
        f'x"\n{run}#',
        f'x"""\n{run}\n"""',
        f"x'''\n{run}\n'''",
        f"$(touch {marker})",
        f"`touch {marker}`; touch {marker}",
        f"x\r{run}",
        f"x\u2028{run}",
        f"x\x85{run}",
        f"x\\\n{run}",
        "caf\udce9 \udcff",  # a file name that is not UTF-8 (surrogateescape)
    ]


def shape(source: str) -> tuple[list[str], set[str]]:
    """(statement kinds in order, every name and attribute used): what a script does,
    whatever its string values are."""
    tree = ast.parse(source)
    statements = [type(node).__name__ for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name)
    return statements, names


def same_program(make: Callable[[str], str], hostile: list[str]) -> None:
    plain_statements, plain_names = shape(make("plain"))
    for text in hostile:
        source = make(text)
        statements, names = shape(source)  # parses at all
        assert statements == plain_statements, (text, source)
        assert names <= plain_names | {"float"}, (text, names - plain_names)


def test_literal_round_trips_every_value_kind() -> None:
    values = [
        None,
        True,
        False,
        0,
        -3,
        1.5,
        "a'b\"c\n",
        b"\x00\xff",
        [1, "x"],
        (1,),
        (),
        {"k": [2]},
    ]
    for value in values:
        assert ast.literal_eval(literal(value)) == value
    assert math.isnan(eval(literal(float("nan"))))
    assert eval(literal([float("inf"), -float("inf")])) == [math.inf, -math.inf]
    with pytest.raises(TypeError):
        literal(object())
    assert "\n" not in comment("a\nb\u2028c\x85d\re")


def _surgery_steps(text: str) -> list[Step]:
    return [
        Step(op="fold"),
        Step(op="extract", inputs=[text], outputs=[text, "y"]),
        Step(
            op="replace",
            nodes=[text],
            new_op=text,
            domain=text,
            name=text,
            attrs={"a": text, "n": float("nan"), "f": [1.5, 2.0], "i": 3},
            inherit_attrs=True,
        ),
        Step(op="replace", nodes=[text], new_op=text, inputs=[text], outputs=[text]),
        Step(
            op="rename_domain",
            domain=text,
            new_domain=text,
            only_op=text,
            new_op=text,
            attrs={text: text},
        ),
        Step(op="cut_outputs", outputs=[text]),
        Step(op="set_dims", dims={text: [1, text]}),
        Step(op="pattern", pattern="gelu"),
    ]


def test_surgery_reproducer_keeps_hostile_steps_and_names_as_values(tmp_path: Path) -> None:
    same_program(
        lambda text: reproducer_script(
            f"{tmp_path}/{text}.onnx", f"{text}.out.onnx", _surgery_steps(text)
        ),
        payloads(tmp_path / MARKER),
    )


def test_export_script_keeps_hostile_sources_as_values(tmp_path: Path) -> None:
    def make(kind: str) -> Callable[[str], str]:
        def script(text: str) -> str:
            source = ModelSource(
                kind,
                text,
                factory=text,
                seed=3,
                inputs=[InputSpec(text, [1, 3], low=float("nan"), high=2.0)],
            )
            settings = ExportSettings(
                output=text,
                input_names=[text],
                output_names=[text],
                dynamic_axes={text: {0: text}},
                plugins=[text],
            )
            return python_script(source, settings)

        return script

    for kind in ("sample", "torchvision", "python", "torchscript", "exported_program"):
        same_program(make(kind), payloads(tmp_path / MARKER))
    npz = ModelSource("torchvision", "resnet18", inputs_npz=f"{tmp_path}/x'''.npz")
    ast.parse(python_script(npz, ExportSettings(exporter="torchscript")))


def test_build_script_keeps_hostile_paths_and_layer_names_as_values(tmp_path: Path) -> None:
    def make(version: str) -> Callable[[str], str]:
        def script(text: str) -> str:
            settings = BuildSettings(
                layer_precisions={text: "fp16"},
                layer_output_types={text: "fp32"},
                timing_cache=text,
                plugins=[f"/plugins/{text}.so"],
                workspace_mb=64,
                profiles=[Profile({text: ([1, 3], [2, 3], [4, 3])})],
                calibration=Calibration(cache=text) if version == "10.16" else None,
                precisions=["int8"] if version == "10.16" else None,
            )
            return build_script(settings, version, f"{text}.onnx", f"{text}.engine")

        return script

    for version in ("8.6", "10.16"):
        same_program(make(version), payloads(tmp_path / MARKER))


def test_fix_ladder_code_keeps_hostile_op_names_as_values(tmp_path: Path) -> None:
    same_program(
        lambda text: _symbolic_code(f"ns::{text}", "", ["v", "i"], 17), payloads(tmp_path / MARKER)
    )
    same_program(lambda text: _translation_code(f"{text}::{text}", ""), payloads(tmp_path / MARKER))


def _fill_strings(value: object, text: str) -> object:
    if isinstance(value, str):
        return text
    if isinstance(value, list):
        return [_fill_strings(v, text) for v in value]
    if isinstance(value, dict):
        return {k: _fill_strings(v, text) for k, v in value.items()}
    return value


@pytest.mark.parametrize("job", sorted(REQUESTS))
def test_every_requests_python_script_keeps_hostile_values(job: str, tmp_path: Path) -> None:
    """A job's "Copy as Python" (the base ``Request.python_script``): its params, every text
    in them hostile and a NaN among them, are one literal."""
    cls = request_class(job)
    request = cls.__new__(cls)

    def script(text: str) -> str:
        params = {"text": _fill_strings(["a", {"b": "c"}], text), "nan": float("nan")}
        request.to_params = lambda: params  # type: ignore[method-assign]
        return Request.python_script(request)

    same_program(script, payloads(tmp_path / MARKER))


def _model_with_names(folder: Path, name: str) -> Path:
    """x → Relu (named ``name``) → Neg → y, saved under a hostile file name."""
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], [name], name=name),
            helper.make_node("Neg", [name], ["y"], name="neg"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.ones(1, np.float32), "unused")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / f"{name[:40].replace('/', '_')}.onnx"
    onnx.save(model, path)
    return path


def test_running_a_hostile_reproducer_writes_the_same_model_and_runs_nothing_else(
    tmp_path: Path,
) -> None:
    marker = tmp_path / MARKER
    for index, text in enumerate(payloads(marker)[:5]):
        folder = tmp_path / f"case{index}"
        folder.mkdir()
        try:
            path = _model_with_names(folder, text)
        except (OSError, UnicodeEncodeError):
            continue
        steps = [
            Step(op="replace", nodes=[text], new_op="Sigmoid", name=text),
            Step(
                op="rename_domain",
                only_op="Neg",
                new_domain="custom",
                new_op="MyNeg",
                attrs={"note": text},
            ),
        ]
        ours, _ = apply_steps(onnx.load(path), steps)
        out = folder / "edited.onnx"
        script = folder / "reproduce.py"
        script.write_text(
            reproducer_script(str(path), str(out), steps),
            encoding="utf-8",
            errors="surrogateescape",
        )
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, cwd=folder, timeout=120
        )
        assert run.returncode == 0, run.stderr[-2000:]
        theirs = onnx.load(out)
        assert [(n.op_type, n.domain) for n in theirs.graph.node] == [
            (n.op_type, n.domain) for n in ours.graph.node
        ]
        assert not marker.exists(), f"case {index} ran code: {text!r}"
