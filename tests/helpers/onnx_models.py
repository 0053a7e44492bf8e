"""Small ONNX models built in tests with onnx.helper: subgraphs, functions, external data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR = 10  # ONNX Runtime 1.31 reads at most IR 13; onnx 1.23 would write 14


def chain_model(nodes: int = 10, width: int = 8, dims: tuple = ("batch", 8)) -> onnx.ModelProto:
    """x → Relu/Add alternating chain of ``nodes`` nodes with a symbolic batch dim."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))
    bias = numpy_helper.from_array(np.ones(width, dtype=np.float32), "bias")
    graph_nodes = []
    current = "x"
    for index in range(nodes):
        out = "y" if index == nodes - 1 else f"t{index}"
        if index % 2:
            graph_nodes.append(helper.make_node("Add", [current, "bias"], [out], f"/b{index}/Add"))
        else:
            graph_nodes.append(helper.make_node("Relu", [current], [out], f"/b{index}/Relu"))
        current = out
    graph = helper.make_graph(graph_nodes, "chain", [x], [y], [bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)


def if_model() -> onnx.ModelProto:
    """An If whose branches are subgraphs (one holds a nested If)."""
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])
    const = lambda name, v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.array(v, dtype=np.float32))
    )
    then_graph = helper.make_graph(
        [const("a", [1, 2])],
        "then",
        [],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
    )
    inner = helper.make_node("If", ["cond"], ["b"], then_branch=then_graph, else_branch=then_graph)
    else_graph = helper.make_graph(
        [inner], "else", [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])]
    )
    node = helper.make_node("If", ["cond"], ["out"], then_branch=then_graph, else_branch=else_graph)
    graph = helper.make_graph([node], "if_graph", [cond], [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)


def function_model() -> onnx.ModelProto:
    """A model calling a local function ``custom::DoubleRelu``."""
    function = helper.make_function(
        "custom",
        "DoubleRelu",
        ["X"],
        ["Y"],
        [helper.make_node("Relu", ["X"], ["T"]), helper.make_node("Add", ["T", "T"], ["Y"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    node = helper.make_node("DoubleRelu", ["x"], ["y"], domain="custom")
    graph = helper.make_graph([node], "with_function", [x], [y])
    return helper.make_model(
        graph,
        functions=[function],
        ir_version=IR,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
    )


def save_with_external_data(
    model: onnx.ModelProto, path: Path, location: str = "weights.bin"
) -> Path:
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )
    return path


def weighty_model(tensors: int, floats_each: int) -> onnx.ModelProto:
    """``tensors`` initializers of ``floats_each`` float32 values, summed into the output."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [floats_each])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [floats_each])
    inits, nodes, current = [], [], "x"
    rng = np.random.default_rng(0)
    for index in range(tensors):
        inits.append(
            numpy_helper.from_array(
                rng.standard_normal(floats_each).astype(np.float32), f"w{index}"
            )
        )
        out = "y" if index == tensors - 1 else f"s{index}"
        nodes.append(helper.make_node("Add", [current, f"w{index}"], [out], f"add{index}"))
        current = out
    graph = helper.make_graph(nodes, "weighty", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)


def custom_op_between_relus() -> onnx.ModelProto:
    """Relu → my::Fancy → Relu: one node no parser knows, with parseable neighbours."""
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="r1"),
            helper.make_node("Fancy", ["a"], ["b"], name="f1", domain="my"),
            helper.make_node("Relu", ["b"], ["y"], name="r2"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("my", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR)


def dynamic_conv_model(channels: int = 8) -> onnx.ModelProto:
    """Conv → Relu → GlobalAveragePool with a symbolic batch: a model that needs a profile."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(
        rng.standard_normal((channels, 3, 3, 3)).astype(np.float32), "w"
    )
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
            helper.make_node("GlobalAveragePool", ["r"], ["y"], name="/pool/GlobalAveragePool"),
        ],
        "dynamic_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", channels, 1, 1])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR)


def layer_norm_model(opset: int = 17, width: int = 16) -> onnx.ModelProto:
    """One LayerNormalization node (an op from opset 17) over the last axis."""
    scale = numpy_helper.from_array(np.full(width, 1.5, np.float32), "scale")
    bias = numpy_helper.from_array(np.full(width, 0.25, np.float32), "bias")
    graph = helper.make_graph(
        [
            helper.make_node(
                "LayerNormalization", ["x", "scale", "bias"], ["y"], name="/ln", axis=-1
            )
        ],
        "layer_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, width])],
        [scale, bias],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR)


def external_data_matmul(folder: Path, megabytes: int = 48) -> Path:
    """``y = x @ w`` with ``w`` of about ``megabytes`` MB in an external-data file beside the
    model (``big.onnx`` + ``big.weights``): a model whose weights take a while to send."""
    side = int((megabytes * (1 << 20) // 4) ** 0.5)
    weight = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what the installed ONNX Runtime reads
    path = folder / "big.onnx"
    onnx.save(model, path, save_as_external_data=True, location="big.weights")
    return path
