"""Models the benchmarks open: a 10k-node graph and a ~200 MB external-data model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR = 10


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
    onnx.save(model, str(path))
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
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    return path
