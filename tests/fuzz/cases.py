"""Seeded fuzz cases per input class. Every base input is built here (small real ONNX models,
Kineto/ORT/trtexec traces, an nsys export, TensorRT engine reports, settings, arrays, PyTorch
archives); mutations come from ``mutate``."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.fuzz.mutate import (
    WEIRD_STRINGS,
    dumps,
    gzipped,
    mutate_bytes,
    mutate_json,
    nested,
    weird_value,
)
from tests.helpers.onnx_models import chain_model, function_model, if_model

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples"
Builder = Callable[[Path], None]


@dataclass
class Case:
    kind: str
    name: str
    files: dict[str, bytes | Builder] = field(default_factory=dict)
    argv: list[str] | None = None  # "{dir}" stands for the case's folder
    call: str = ""  # an in-process loader instead of the CLI
    args: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # files a sentence may name
    mutation: str = ""
    secret: bytes = b""  # bytes of a file outside the case folder that must never be read in


# -- ONNX models ----------------------------------------------------------------------------------
@cache
def base_models() -> dict[str, bytes]:
    models = {
        "chain.onnx": chain_model(12).SerializeToString(),
        "if.onnx": if_model().SerializeToString(),
        "function.onnx": function_model().SerializeToString(),
    }
    for name in (
        "small_cnn.dynamo.onnx",
        "small_cnn.torchscript.onnx",
        "custom_fn_symbolic.torchscript.onnx",
        "deform_conv.dynamo19.onnx",
        "roll_dims.dynamo.onnx",
    ):
        models[name] = (SAMPLES / name).read_bytes()
    return models


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return list(model.graph.node)


def _pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(0, len(items)))]


def _weird(rng: np.random.Generator) -> str:
    return _pick(rng, list(WEIRD_STRINGS))


def _external(model: onnx.ModelProto, rng: np.random.Generator, files: dict[str, Any]) -> str:
    """Turn an initializer external, with a hostile location, offset or length."""
    inits = list(model.graph.initializer)
    if not inits:
        return "no initializer"
    tensor = _pick(rng, inits)
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.ClearField("int64_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    location = _pick(
        rng,
        [
            "weights.bin",
            "loop_a",
            "dangling",
            "x" * 300,
            "a\x00b",
            "../outside.bin",
            "/etc/hostname",
            "",
            "folder",
            "missing.bin",
        ],
    )
    entries = {"location": location}
    if rng.random() < 0.6:
        entries["offset"] = _pick(rng, ["0", "abc", "-5", "1e3", "9" * 30, "", "12"])
    if rng.random() < 0.6:
        entries["length"] = _pick(rng, ["4", "abc", "-1", "9" * 30, "", "100000000"])
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    files["weights.bin"] = bytes(64)

    def hostile(folder: Path) -> None:
        (folder / "loop_a").symlink_to(folder / "loop_b")
        (folder / "loop_b").symlink_to(folder / "loop_a")
        (folder / "dangling").symlink_to(folder / "nowhere")
        (folder / "folder").mkdir()

    files["_links"] = hostile
    return f"external {entries}"


def _name_scopes(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    value = _pick(
        rng,
        [
            "5",
            "None",
            "[" * 10000 + "]" * 10000,
            str([""] * 20000),
            "['a'",
            "{}",
            "[1, 2, 3]",
            "'text'",
            "[['a'], ['b']]",
            "['', " + "'m', " * 3000 + "'op']",
            "\x00",
        ],
    )
    for node in _nodes(model):
        if rng.random() < 0.5:
            entry = node.metadata_props.add()
            entry.key, entry.value = "pkg.torch.onnx.name_scopes", value
    return f"name_scopes {value[:30]!r}"


def mutate_model(data: bytes, rng: np.random.Generator, files: dict[str, Any]) -> tuple[bytes, str]:
    """A protobuf-level mutation (the file still parses) or a byte-level one."""
    if rng.random() < 0.25:
        return mutate_bytes(data, rng), "bytes"
    model = onnx.ModelProto()
    model.ParseFromString(data)
    nodes = _nodes(model)
    action = int(rng.integers(0, 14))
    node = _pick(rng, nodes) if nodes else None
    if action == 0 and node is not None:
        node.op_type = _weird(rng)
        what = f"op_type {node.op_type[:20]!r}"
    elif action == 1 and node is not None:
        node.domain = _weird(rng)
        what = "domain"
    elif action == 2 and node is not None:
        node.name = _pick(rng, [*WEIRD_STRINGS, "/a" * 5000 + "/Op"])
        what = "node name"
    elif action == 3:
        what = _name_scopes(model, rng)
    elif action == 4:
        what = _external(model, rng, files)
    elif action == 5 and model.graph.input:
        dims = model.graph.input[0].type.tensor_type.shape.dim
        for dim in dims:
            dim.dim_value = int(_pick(rng, [-1, 0, 2**62, 7]))
        what = "input dims"
    elif action == 6:
        model.ir_version = int(_pick(rng, [0, -1, 1, 3, 7, 11, 13, 14, 99, 2**40]))
        what = f"ir_version {model.ir_version}"
    elif action == 7 and model.opset_import:
        model.opset_import[0].version = int(_pick(rng, [-1, 0, 1, 5, 8, 25, 99, 2**40]))
        what = f"opset {model.opset_import[0].version}"
    elif action == 8 and node is not None and node.output:
        node.input.append(node.output[0])  # a cycle: the node feeds itself
        if len(nodes) > 1:
            nodes[0].input.append(nodes[-1].output[0] if nodes[-1].output else "")
        what = "cycle"
    elif action == 9 and node is not None:
        attribute = node.attribute.add()
        attribute.name = _pick(rng, ["kernel_shape", "axis", "then_branch", "value"])
        attribute.type = int(_pick(rng, [0, 1, 2, 3, 4, 5, 6, 7, 8, 14]))
        what = f"attribute {attribute.name}"
    elif action == 10 and model.graph.initializer:
        tensor = _pick(rng, list(model.graph.initializer))
        tensor.data_type = int(_pick(rng, [0, 8, 99, 16, 21]))
        if rng.random() < 0.5:
            del tensor.dims[:]
            tensor.dims.extend([2**40, 3])
        what = "initializer type/dims"
    elif action == 11:
        function = model.functions.add()
        function.name, function.domain = "Self", "custom"
        function.node.add().CopyFrom(helper.make_node("Self", ["X"], ["Y"], domain="custom"))
        function.input.append("X")
        function.output.append("Y")
        model.graph.node.add().CopyFrom(helper.make_node("Self", ["x"], ["selfy"], domain="custom"))
        what = "recursive local function"
    elif action == 12:
        depth = int(_pick(rng, [10, 30]))  # 3 protobuf levels each: 100 is upb's limit
        leaf = helper.make_graph([], "leaf", [], [])
        inner = leaf
        for _ in range(depth):  # then-branches nest; else-branches stay leaves (linear size)
            branch = helper.make_node("If", ["c"], ["o"], then_branch=inner, else_branch=leaf)
            inner = helper.make_graph([branch], "nest", [], [])
        model.graph.node.add().CopyFrom(
            helper.make_node("If", ["c"], ["o"], then_branch=inner, else_branch=leaf)
        )
        what = f"If nested {depth} deep"
    else:
        for _ in range(int(rng.integers(1, 4))):
            if nodes:
                copy = model.graph.node.add()
                copy.CopyFrom(_pick(rng, nodes))
        what = "duplicated nodes"
    return model.SerializeToString(), what


ONNX_COMMANDS = (
    ["inspect", "{model}"],
    ["inspect", "--json", "{model}"],
    ["inspect", "--no-check", "{model}"],
    ["graph", "{model}", "--stats", "--expand", "3"],
    ["graph", "{model}", "--json"],
    ["support", "{model}", "--target", "ort-cpu", "--target", "trt-8.6", "--target", "trt-10.1"],
    ["support", "{model}", "--target", "trt-7.1", "--json"],
)


def onnx_cases(kind: str, count: int, rng: np.random.Generator) -> Iterator[Case]:
    models = base_models()
    names = sorted(models)
    commands = {
        "inspect": ONNX_COMMANDS[:3],
        "graph": ONNX_COMMANDS[3:5],
        "support": ONNX_COMMANDS[5:],
    }[kind]
    for index in range(count):
        base = _pick(rng, names)
        files: dict[str, Any] = {}
        data, what = mutate_model(models[base], rng, files)
        files["model.onnx"] = data
        argv = [a.replace("{model}", "{dir}/model.onnx") for a in _pick(rng, list(commands))]
        yield Case(
            kind,
            f"{kind}-{index:04d}",
            files,
            argv,
            names=["model.onnx"],
            mutation=f"{base}: {what}",
        )


# -- traces ---------------------------------------------------------------------------------------
def kineto_trace() -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
    ]
    for i in range(12):
        ts = 1_700_000_000_000.125 + 50 * i
        events += [
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 2,
                "ts": ts,
                "dur": 4.5,
                "args": {"correlation": i},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"gemm_{i % 3}",
                "pid": 0,
                "tid": 7,
                "ts": ts + 6,
                "dur": 20.25,
                "args": {
                    "device": 0,
                    "stream": 7,
                    "correlation": i,
                    "grid": [128, 1, 1],
                    "block": [256, 1, 1],
                },
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "Memcpy HtoD (Pinned -> Device)",
                "pid": 0,
                "tid": 8,
                "ts": ts + 1,
                "dur": 3.0,
                "args": {"device": 0, "stream": 8, "bytes": 1 << 20, "correlation": 100 + i},
            },
            {"ph": "s", "cat": "ac2g", "id": i, "pid": 1, "tid": 2, "ts": ts, "name": "ac2g"},
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 2,
                "ts": ts - 1,
                "dur": 6.0,
            },
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"step {i}",
                "pid": 1,
                "tid": 2,
                "ts": ts - 2,
                "dur": 40.0,
            },
        ]
    return {"schemaVersion": 1, "traceEvents": events, "displayTimeUnit": "ms"}


def ort_trace() -> list[dict[str, Any]]:
    return [
        {
            "cat": "Node",
            "pid": 1,
            "tid": 9,
            "dur": 12 + i,
            "ts": 100 + 20 * i,
            "ph": "X",
            "name": f"node_{i}_kernel_time",
            "args": {"op_name": "Conv", "provider": "CPUExecutionProvider"},
        }
        for i in range(10)
    ] + [
        {
            "cat": "Session",
            "pid": 1,
            "tid": 9,
            "dur": 400,
            "ts": 90,
            "ph": "X",
            "name": "model_run",
            "args": {},
        }
    ]


def times_records(count: int = 40, warmup: int = 5) -> list[dict[str, float]]:
    records = []
    for i in range(count):
        start = i * 20.0 if i < warmup else 200.0 + i * 2.0
        records.append(
            {
                "startEnqMs": start,
                "endEnqMs": start + 0.01,
                "startH2dMs": start,
                "endH2dMs": start + 0.1,
                "startComputeMs": start + 0.1,
                "endComputeMs": start + 1.1,
                "startD2hMs": start + 1.1,
                "endD2hMs": start + 1.2,
                "h2dMs": 0.1,
                "computeMs": 1.0,
                "d2hMs": 0.1,
                "latencyMs": 1.2,
                "endToEndMs": 1.2,
            }
        )
    return records


def profile_records() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"count": 100}]
    rows += [
        {
            "name": f"conv{i} + relu{i}",
            "timeMs": 10.0 + i,
            "averageMs": 0.1 + i / 100,
            "medianMs": 0.1,
            "percentage": 5.0,
        }
        for i in range(8)
    ]
    return rows


@cache
def nsys_bytes() -> bytes:
    from tests.helpers.synthetic_trace import make_trace, write_nsys_sqlite

    with tempfile.TemporaryDirectory() as folder:
        path = write_nsys_sqlite(make_trace(400, 4, seed=3), Path(folder) / "t.sqlite")
        return path.read_bytes()


def _mutated_nsys(rng: np.random.Generator) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.sqlite"
        path.write_bytes(nsys_bytes())
        db = sqlite3.connect(path)
        tables = [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "StringIds",
        ]
        table = _pick(rng, tables)
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        column = _pick(rng, columns)
        action = int(rng.integers(0, 4))
        if action == 0:
            value = _pick(rng, ["text", None, 2**62, -(2**62), 1.5, b"\x00\x01", ""])
            try:
                db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid % 3 = 0", (value,))
                what = f"{table}.{column} = {value!r}"
            except sqlite3.IntegrityError:  # a NOT NULL / key column: drop the table instead
                db.execute(f"DROP TABLE {table}")
                what = f"drop {table}"
        elif action == 1:
            db.execute(f"DROP TABLE {table}")
            what = f"drop {table}"
        elif action == 2:
            db.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO renamed_{column}")
            what = f"rename {table}.{column}"
        else:
            db.execute(f"UPDATE {table} SET {column} = {column} * -1")
            what = f"negate {table}.{column}"
        db.commit()
        db.close()
        data = path.read_bytes()
    if rng.random() < 0.2:
        return mutate_bytes(data, rng), what + " + bytes"
    return data, what


def trace_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    bases: dict[str, Any] = {
        "kineto.json": kineto_trace(),
        "ort.json": ort_trace(),
        "times.json": times_records(),
        "profile.json": profile_records(),
    }
    for index in range(count):
        choice = int(rng.integers(0, 6))
        if choice == 5:
            data, what = _mutated_nsys(rng)
            name = "trace.sqlite"
        else:
            base = _pick(rng, sorted(bases))
            name = "trace.json"
            if rng.random() < 0.75:
                data = dumps(mutate_json(bases[base], rng, int(rng.integers(1, 4))))
                what = f"{base}: json"
            else:
                data, what = mutate_bytes(dumps(bases[base]), rng), f"{base}: bytes"
            if rng.random() < 0.15:
                data = gzipped(data, rng, corrupt=bool(rng.random() < 0.5))
                name, what = "trace.json.gz", what + " gz"
        extra = _pick(rng, [[], ["--json"], ["--chrome", "{dir}/out.json"], ["--csv", "{dir}/csv"]])
        yield Case(
            "trace",
            f"trace-{index:04d}",
            {name: data},
            ["trace", f"{{dir}}/{name}", *extra],
            names=[name],
            mutation=what,
        )


# -- engine reports -------------------------------------------------------------------------------
def layer_info() -> dict[str, Any]:
    layers = []
    for i in range(6):
        layers.append(
            {
                "Name": f"conv{i} + relu{i}",
                "LayerType": "CaskConvolution",
                "Inputs": [
                    {"Name": f"t{i}", "Dimensions": [1, 64, 56, 56], "Format/Datatype": "Half"}
                ],
                "Outputs": [
                    {"Name": f"t{i + 1}", "Dimensions": [1, 64, 56, 56], "Format/Datatype": "Half"}
                ],
                "TacticValue": "0x1",
                "TacticName": "sm80_xmma",
                "Metadata": f"[ONNX Layer: conv{i}]",
            }
        )
    return {"Layers": layers, "Bindings": ["input", "output"]}


LOG = "\n".join(
    [
        "[I] TensorRT version: 10.3.0",
        "[I] Warmup completed 5 queries over 200 ms",
        "[I] === Performance summary ===",
        "[I] Throughput: 812.5 qps",
        "[I] Latency: min = 1.1 ms, max = 1.4 ms, mean = 1.2 ms, median = 1.2 ms, "
        "percentile(90%) = 1.3 ms, percentile(95%) = 1.3 ms, percentile(99%) = 1.4 ms",
        "[I] GPU Compute Time: min = 1.0 ms, max = 1.3 ms, mean = 1.1 ms, median = 1.1 ms, "
        "percentile(99%) = 1.3 ms",
    ]
)


def engine_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    bases = {
        "layers.json": dumps(layer_info()),
        "profile.json": dumps(profile_records()),
        "times.json": dumps(times_records()),
        "trtexec.log": LOG.encode(),
        "meta.json": dumps(
            {
                "performance_summary": {"Throughput": 800.0, "Latency": [1.1, 1.4, 1.2, 1.2, 1.4]},
                "inference_options": {"Duration": "3s (+ 200ms warm up)"},
            }
        ),
    }
    roles = {
        "layers.json": [],
        "profile.json": ["--profile"],
        "times.json": ["--times"],
        "trtexec.log": ["--log"],
        "meta.json": ["--log"],
    }
    for index in range(count):
        files: dict[str, bytes | Builder] = dict(bases)
        target = _pick(rng, sorted(bases))
        data = bases[target]
        if target.endswith(".json") and rng.random() < 0.7:
            data = dumps(mutate_json(json.loads(data), rng, int(rng.integers(1, 4))))
            what = f"{target}: json"
        else:
            data, what = mutate_bytes(data, rng), f"{target}: bytes"
        files[target] = data
        argv = ["engine", "{dir}/layers.json"]
        if roles[target]:
            argv += [roles[target][0], f"{{dir}}/{target}"]
        elif rng.random() < 0.5:
            argv += [
                "--profile",
                "{dir}/profile.json",
                "--times",
                "{dir}/times.json",
                "--log",
                "{dir}/trtexec.log",
            ]
        if rng.random() < 0.3:
            argv += ["--diff", "{dir}/layers.json", "--json"]
        yield Case("engine", f"engine-{index:04d}", files, argv, names=[target], mutation=what)


# -- build settings -------------------------------------------------------------------------------
SETTING_KEYS = (
    "precisions",
    "no_tf32",
    "strongly_typed",
    "precision_constraints",
    "layer_precisions",
    "layer_output_types",
    "workspace_mb",
    "tactic_dram_mb",
    "optimization_level",
    "profiles",
    "timing_cache",
    "tactic_sources",
    "sparsity",
    "dla_core",
    "gpu_fallback",
    "hardware_compatibility",
    "version_compatible",
    "max_aux_streams",
    "profiling_verbosity",
    "refit",
    "strip_weights",
    "calibration",
    "plugins",
    "workspace",
    "fp16",
)
GOOD_VALUES: dict[str, list[Any]] = {
    "precisions": [["fp16"], ["fp16", "int8"], ["bf16"], [], ["fp8"], ["tf32"]],
    "no_tf32": [True, False],
    "strongly_typed": [True, False],
    "precision_constraints": ["prefer", "obey", "none", "sometimes"],
    "layer_precisions": [{"conv*": "fp32"}, {"/a/b": "int8"}, {"x": "fp64"}],
    "layer_output_types": [{"conv*": "fp16"}],
    "workspace_mb": [1024, 0, 1 << 40],
    "tactic_dram_mb": [64],
    "optimization_level": [0, 3, 5, 7],
    "profiles": [
        [{"image": [[1, 3, 32, 32], [1, 3, 32, 32], [1, 3, 32, 32]]}],
        [{"image": [[1, 3, 32, 32], [4, 3, 32, 32], [8, 3, 32, 32]]}],
        [{"input": [[1, 3], [1, 3], [1, 3]]}],
        [{"image": [[8, 3, 32, 32], [4, 3, 32, 32], [1, 3, 32, 32]]}],
        [],
    ],
    "timing_cache": ["t.cache", ""],
    "tactic_sources": [["-CUDNN", "+CUBLAS"], ["CUDNN"], []],
    "sparsity": ["enable", "disable", "force", "maybe"],
    "dla_core": [0, 1],
    "gpu_fallback": [True],
    "hardware_compatibility": ["ampere+", "none", "sameComputeCapability", "hopper"],
    "version_compatible": [True, False],
    "max_aux_streams": [0, 4],
    "profiling_verbosity": ["detailed", "layer_names_only", "none", "loud"],
    "refit": [True, False],
    "strip_weights": [True],
    "calibration": [{"method": "entropy", "data": "images"}, {"method": "percentile"},
                    {"method": "minmax", "cache": "c.cache", "percentile": 99.9}],
    "plugins": [["libx.so"], []],
}  # fmt: skip


def _toml_value(value: Any) -> str:
    import tomli_w

    try:
        return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()
    except Exception:
        return json.dumps(str(value))


def build_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    model = (SAMPLES / "small_cnn.dynamo.onnx").read_bytes()
    for index in range(count):
        lines = ["[build]"] if rng.random() < 0.5 else []
        for _ in range(int(rng.integers(1, 5))):
            key = _pick(rng, list(SETTING_KEYS))
            if key in GOOD_VALUES and rng.random() < 0.8:
                value = _pick(rng, GOOD_VALUES[key])
            else:
                value = weird_value(rng)
                if value is None or (isinstance(value, list) and value and value[0] is None):
                    value = "none"
            lines.append(f"{key} = {_toml_value(value)}")
        text = "\n".join(dict.fromkeys(lines)).encode()
        what = "toml"
        if rng.random() < 0.15:
            text, what = mutate_bytes(text, rng), "bytes"
        version = _pick(rng, ["8.6", "10.16", "11.4", "12.0", "7.2", "x", "10", "9.3"])
        extra = _pick(
            rng,
            [
                [],
                ["--polygraphy"],
                ["--migrate"],
                ["--json"],
                ["--script", "{dir}/build.py"],
                ["--engine", "{dir}/m.plan"],
            ],
        )
        argv = [
            "build",
            "{dir}/model.onnx",
            "--settings",
            "{dir}/settings.toml",
            "--trt-version",
            version,
            *extra,
        ]
        yield Case(
            "build",
            f"build-{index:04d}",
            {"model.onnx": model, "settings.toml": text},
            argv,
            names=["settings.toml"],
            mutation=what,
        )


# -- validate inputs ------------------------------------------------------------------------------
def _npz(arrays: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npy(array: Any) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _array(rng: np.random.Generator) -> Any:
    kind = int(rng.integers(0, 11))
    good = rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)
    return [
        good,
        good.astype(np.float64),
        good[0],
        good.astype(np.int64),
        np.zeros((2, 3, 32, 32), np.float32),
        np.zeros((1, 3, 16, 16), np.float32),
        np.array([{"a": 1}, None], dtype=object),
        np.array(["text", "more"]),
        np.zeros((0,), np.float32),
        np.float32(3.0),
        good.astype(np.complex64),
    ][kind]


def _image_folder(rng: np.random.Generator) -> Builder:
    arrays = [_array(rng) for _ in range(int(rng.integers(1, 5)))]
    junk = bool(rng.random() < 0.5)

    def build(folder: Path) -> None:
        data = folder / "data"
        data.mkdir()
        for number, array in enumerate(arrays):
            (data / f"{number}.npy").write_bytes(_npy(array))
        if junk:
            (data / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
            (data / "empty.jpg").write_bytes(b"")
            (data / "odd.npz").write_bytes(b"PK\x03\x04junk")

    return build


def validate_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    model = str(SAMPLES / "small_cnn.dynamo.onnx")
    for index in range(count):
        choice = int(rng.integers(0, 4))
        if choice == 0:
            files: dict[str, Any] = {"inputs.npz": _npz({"image": _array(rng)})}
            path, what = "inputs.npz", "npz"
        elif choice == 1:
            files = {"inputs.npy": _npy(_array(rng))}
            path, what = "inputs.npy", "npy"
        elif choice == 2:
            files = {"_folder": _image_folder(rng)}
            path, what = "data", "folder"
        else:
            data = _npz({"image": rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)})
            files = {"inputs.npz": mutate_bytes(data, rng)}
            path, what = "inputs.npz", "npz bytes"
        names = [path] if path != "data" else ["data/", ".npy", ".png", ".jpg", ".npz"]
        yield Case(
            "validate",
            f"validate-{index:04d}",
            files,
            call="validate_inputs",
            args={"model": model, "inputs": path},
            names=names,
            mutation=what,
        )


# -- PyTorch sources ------------------------------------------------------------------------------
MARKER = "PWNED"


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@cache
def torch_bases() -> dict[str, bytes]:
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x).relu()

    bases = {}
    buffer = io.BytesIO()
    torch.export.save(torch.export.export(Tiny(), (torch.randn(1, 4),)), buffer)
    bases["model.pt2"] = buffer.getvalue()
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(Tiny()), buffer)
    bases["model.pt"] = buffer.getvalue()
    buffer = io.BytesIO()
    torch.save(Tiny().state_dict(), buffer)
    bases["weights.pt"] = buffer.getvalue()
    return bases


def _hostile_pickle(marker: str) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(_Payload(marker), buffer)
    return buffer.getvalue()


def _mutate_zip(data: bytes, rng: np.random.Generator, marker: str) -> tuple[bytes, str]:
    source = zipfile.ZipFile(io.BytesIO(data))
    names = source.namelist()
    target_name = _pick(rng, names)
    action = int(rng.integers(0, 7))
    if action >= 5:  # native code (AOTInductor's layout) or a decompression bomb, added
        out = io.BytesIO()
        prefix = names[0].split("/")[0]
        with zipfile.ZipFile(out, "w") as target:
            for name in names:
                target.writestr(name, source.read(name))
            if action == 5:
                member = _pick(rng, ["data/aotinductor/m/m.so", "data/x.cpp", "data/k.cubin",
                                     "data/aotinductor/m/m_metadata.json"])  # fmt: skip
                target.writestr(f"{prefix}/{member}", b"\x7fELF" + bytes(64))
            else:
                target.writestr(f"{prefix}/data/weights/bomb", bytes(96 << 20),
                                compress_type=zipfile.ZIP_DEFLATED)  # fmt: skip
        return out.getvalue(), "native member" if action == 5 else "bomb member"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in names:
            content = source.read(name)
            if name == target_name:
                if action == 0:
                    continue  # drop it
                if action == 1:
                    content = mutate_bytes(content, rng)
                elif action == 2:
                    content = _hostile_pickle(marker)
                elif action == 3 and name.endswith(".json"):
                    try:
                        content = dumps(mutate_json(json.loads(content), rng, 2))
                    except ValueError:
                        content = mutate_bytes(content, rng)
                else:
                    content = content.replace(b"false", b"true")  # use_pickle → true
            target.writestr(name, content)
    return out.getvalue(), f"zip {target_name.rsplit('/', 1)[-1]} action {action}"


def torch_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    bases = torch_bases()
    for index in range(count):
        base = _pick(rng, sorted(bases))
        marker = str(marker_dir() / f"{MARKER}-{index:04d}")
        if rng.random() < 0.7:
            data, what = _mutate_zip(bases[base], rng, marker)
        else:
            data, what = mutate_bytes(bases[base], rng), "bytes"
        suffix = ".pt2" if base.endswith(".pt2") else ".pt"
        name = f"source{suffix}"
        yield Case(
            "torch",
            f"torch-{index:04d}",
            {name: data},
            call="torch_source",
            args={"path": name, "marker": marker},
            names=[name],
            mutation=f"{base}: {what}",
        )


# The readers of a model's weights, each fed models whose external data points outside their
# folder (``..``, an absolute path, a symlink in the folder) or is otherwise hostile: the guard
# must refuse before any of them reads a byte (TensorRT-RTX's parser baked such bytes into an
# engine). A case fails when the outside file's bytes appear in anything it wrote.
SECRET = b"DEPLOYLENS-FUZZ-SECRET-" * 8
READER_COMMANDS = (
    ["surgery", "{model}", "--fold", "--no-tensorrt", "--out", "{dir}/edited.onnx"],
    ["build", "{model}", "--build", "--target-cc", "sm89", "--engine", "{dir}/m.plan"],
    ["calibrate", "{model}", "--data", "{dir}/data", "--out", "{dir}/q.onnx"],
    ["validate", "{model}"],
)
OUTSIDE = ("../secret.bin", "link_out", "linkdir/w.bin", "/proc/self/environ", "weights.bin")


def reader_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    model = chain_model(6)
    for index in range(count):
        case_model = onnx.ModelProto()
        case_model.CopyFrom(model)
        tensor = _pick(rng, list(case_model.graph.initializer))
        size = len(numpy_helper.to_array(tensor).tobytes())
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
        tensor.data_location = TensorProto.EXTERNAL
        location = _pick(rng, list(OUTSIDE))
        tensor.external_data.add(key="location", value=location)
        tensor.external_data.add(key="length", value=str(size))

        def layout(folder: Path, size: int = size, made: onnx.ModelProto = case_model) -> None:
            (folder.parent / "secret.bin").write_bytes(SECRET * (1 + size // len(SECRET)))
            (folder / "link_out").symlink_to(folder.parent / "secret.bin")
            (folder / "linkdir").symlink_to(folder.parent)
            (folder / "weights.bin").write_bytes(bytes(size))
            data = folder / "data"
            data.mkdir()
            np.save(data / "x.npy", np.ones([d.dim_value or 1 for d in _dims(made)],
                                            np.float32))  # fmt: skip

        argv = [a.replace("{model}", "{dir}/model.onnx") for a in _pick(rng, list(READER_COMMANDS))]
        yield Case(
            "readers", f"readers-{index:04d}",
            {"model.onnx": case_model.SerializeToString(), "_layout": layout}, argv,
            names=["model.onnx", location.rsplit("/", 1)[-1]], mutation=f"external {location!r}",
            secret=SECRET,
        )  # fmt: skip


def _dims(model: onnx.ModelProto) -> list[Any]:
    return list(model.graph.input[0].type.tensor_type.shape.dim)


CLASSES: dict[str, Callable[[int, np.random.Generator], Iterator[Case]]] = {
    "inspect": lambda n, rng: onnx_cases("inspect", n, rng),
    "graph": lambda n, rng: onnx_cases("graph", n, rng),
    "support": lambda n, rng: onnx_cases("support", n, rng),
    "trace": trace_cases,
    "engine": engine_cases,
    "build": build_cases,
    "validate": validate_cases,
    "torch": torch_cases,
    "readers": reader_cases,
}


def _own_classes() -> None:
    """Issue 44's families (``own_cases.py``), registered beside the first round's."""
    from tests.fuzz import own_cases

    CLASSES.update({
        "sidecar": own_cases.sidecar_cases,
        "project": own_cases.project_cases,
        "registry": own_cases.registry_cases,
        "measured": own_cases.measured_cases,
        "archives": own_cases.archive_cases,
        "traces": own_cases.pathological_cases,
        "profiles": own_cases.profile_cases,
    })  # fmt: skip
    from tests.fuzz import hf_cases  # issue 63's: hf:DIR folders, input specs, cache places

    CLASSES.update({"hf": hf_cases.hf_cases, "specs": hf_cases.spec_cases,
                    "cache": hf_cases.cache_cases})  # fmt: skip


_own_classes()


def marker_dir() -> Path:
    """Where a hostile pickle would create its marker file if it ever ran (the runner sets it
    and checks it stays empty)."""
    return Path(os.environ.get("DEPLOYLENS_FUZZ_MARKERS", tempfile.gettempdir()))


def write_case(case: Case, folder: Path) -> None:
    """The case's files in ``folder``."""
    for name, content in case.files.items():
        if callable(content):
            content(folder)
        else:
            (folder / name).write_bytes(content)


__all__ = ["CLASSES", "MARKER", "Case", "marker_dir", "nested", "write_case"]
