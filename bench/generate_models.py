"""Models the benchmarks open: a 10k-node graph and a ~200 MB external-data model."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.files import atomic_write_bytes

IR = 10


def save(model: onnx.ModelProto, path: Path) -> None:
    """Write through a temporary file and rename it into place: the models are cached between
    runs (``path.exists()`` is trusted), so a run killed mid-write must not leave half a model."""
    atomic_write_bytes(path, model.SerializeToString())


def many_nodes(path: Path, nodes: int = 10_000) -> Path:
    """A chain of ``nodes`` Relu/Add nodes named like a TorchScript export (/block/op)."""
    if path.exists():
        return path
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])
    bias = numpy_helper.from_array(np.ones(64, dtype=np.float32), "bias")
    graph_nodes, current = [], "x"
    for index in range(nodes):
        out = "y" if index == nodes - 1 else f"t{index}"
        op, inputs = ("Add", [current, "bias"]) if index % 2 else ("Relu", [current])
        graph_nodes.append(
            helper.make_node(op, inputs, [out], f"/layer{index // 100}/{op}_{index}")
        )
        current = out
    graph = helper.make_graph(graph_nodes, "many_nodes", [x], [y], [bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)
    save(model, path)
    return path


def external_data(path: Path, megabytes: int = 200, tensors: int = 50) -> Path:
    """``tensors`` float32 initializers totalling ``megabytes`` MB, stored in ``weights.bin``."""
    if path.exists() and (path.parent / "weights.bin").exists():
        return path
    floats = megabytes * 1_000_000 // 4 // tensors
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [floats])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [floats])
    rng = np.random.default_rng(0)
    inits, nodes, current = [], [], "x"
    for index in range(tensors):
        inits.append(numpy_helper.from_array(rng.random(floats, dtype=np.float32), f"w{index}"))
        out = "y" if index == tensors - 1 else f"s{index}"
        nodes.append(helper.make_node("Add", [current, f"w{index}"], [out], f"add{index}"))
        current = out
    graph = helper.make_graph(nodes, "external", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)
    with tempfile.TemporaryDirectory(dir=path.parent) as staging:
        staged = Path(staging) / path.name
        onnx.save_model(
            model,
            str(staged),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="weights.bin",
            size_threshold=0,
        )
        # weights first, the model last: a model in place means its weights are whole
        os.replace(Path(staging) / "weights.bin", path.parent / "weights.bin")
        os.replace(staged, path)
    return path


def transformer_like(path: Path, nodes: int, hidden: int = 8, flat: bool = False) -> Path:
    """A transformer-like DAG of about ``nodes`` nodes: blocks of attention (q/k/v projections,
    scores, softmax, context) and MLP with residual adds, named like a TorchScript export
    (``/layers.3/attn/q_proj/MatMul``) unless ``flat``. Weights are tiny: the graph is big.
    """
    if path.exists():
        return path
    per_block = 22
    blocks = max(1, nodes // per_block)
    w = numpy_helper.from_array(np.eye(hidden, dtype=np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", hidden])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", hidden])
    made: list[onnx.NodeProto] = []

    def node(op: str, inputs: list[str], out: str, scope: str) -> str:
        name = "" if flat else f"/{scope}/{op}"
        made.append(helper.make_node(op, inputs, [out], name or f"{op}_{len(made)}"))
        return out

    h = "x"
    for b in range(blocks):
        p = f"layers.{b}"
        t = f"b{b}_"
        n1 = node("LayerNormalization", [h, "scale", "bias"], t + "ln1", f"{p}/ln1")
        q = node("MatMul", [n1, "w"], t + "q", f"{p}/attn/q_proj")
        k = node("MatMul", [n1, "w"], t + "k", f"{p}/attn/k_proj")
        v = node("MatMul", [n1, "w"], t + "v", f"{p}/attn/v_proj")
        kt = node("Transpose", [k], t + "kt", f"{p}/attn")
        s = node("MatMul", [q, kt], t + "s", f"{p}/attn")
        sc = node("Mul", [s, "scale"], t + "sc", f"{p}/attn")
        sm = node("Softmax", [sc], t + "sm", f"{p}/attn")
        c = node("MatMul", [sm, v], t + "c", f"{p}/attn")
        o = node("MatMul", [c, "w"], t + "o", f"{p}/attn/o_proj")
        r1 = node("Add", [h, o], t + "r1", p)
        n2 = node("LayerNormalization", [r1, "scale", "bias"], t + "ln2", f"{p}/ln2")
        u = node("MatMul", [n2, "w"], t + "u", f"{p}/mlp/up_proj")
        ub = node("Add", [u, "bias"], t + "ub", f"{p}/mlp/up_proj")
        g = node("Sigmoid", [ub], t + "g", f"{p}/mlp/act")
        a = node("Mul", [ub, g], t + "a", f"{p}/mlp/act")
        dn = node("MatMul", [a, "w"], t + "d", f"{p}/mlp/down_proj")
        db = node("Add", [dn, "bias"], t + "db", f"{p}/mlp/down_proj")
        r2 = node("Add", [r1, db], t + "r2", p)
        sq = node("Mul", [r2, "scale"], t + "sq", f"{p}/out")
        rs = node("Relu", [sq], t + "rs", f"{p}/out")
        h = node("Add", [rs, r2], t + "h", f"{p}/out")
    made.append(helper.make_node("Identity", [h], ["y"], "/head/Identity"))
    inits = [
        w,
        numpy_helper.from_array(np.ones(hidden, np.float32), "scale"),
        numpy_helper.from_array(np.zeros(hidden, np.float32), "bias"),
    ]
    graph = helper.make_graph(made, "transformer_like", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)
    save(model, path)
    return path
