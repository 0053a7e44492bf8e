"""Mixed-precision variants of a model, built from one calibration — never recalibrated per layer.

INT8: ONNX Runtime's Q/DQ model puts DequantizeLinear nodes in front of each quantized node's
inputs (an activation's Q→DQ pair, a weight's int8 initializer → DQ). ``keep_float`` rewires
chosen nodes to the float tensors the prepared fp32 model gives them (so they compute in FP32
while everything else stays INT8); ``quantize_only`` starts from the fp32 model and gives chosen
nodes the Q/DQ producers the full Q/DQ model made for them (so only they compute in INT8). The
scales are the calibration's either way.

FP16: onnxconverter-common's float16 conversion with a node block list (blocked nodes stay FP32,
casts are inserted around them).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

QUANTIZABLE = ("Conv", "ConvTranspose", "Gemm", "MatMul")
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def quantized_nodes(qdq: onnx.ModelProto) -> list[str]:
    """Names of every node the Q/DQ model feeds through a DequantizeLinear: the compute nodes
    (Conv, Gemm, MatMul …) and every other op it quantizes (Relu, MaxPool, Add, ReduceMean …)
    — each is a tensor whose quantization a plan controls. Compute nodes alone left the other
    ops' Q/DQ pairs (and the network input's) in every variant, so keeping "everything" in FP32
    was never the FP32 model."""
    dq_outputs = {o for n in qdq.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return [
        n.name
        for n in qdq.graph.node
        if n.op_type not in QDQ_OPS and n.name and any(i in dq_outputs for i in n.input)
    ]


def reads_input(qdq: onnx.ModelProto) -> dict[str, str]:
    """Node → the network input it reads through a Q/DQ pair (where the input's own INT8 range,
    a calibration choice on raw data, is what quantizing the node costs)."""
    inputs = {i.name for i in qdq.graph.input}
    producer = {o: n for n in qdq.graph.node for o in n.output}
    found = {}
    for node in qdq.graph.node:
        for name in node.input:
            dq = producer.get(name)
            q = (
                producer.get(dq.input[0])
                if dq is not None and dq.op_type == "DequantizeLinear"
                else None
            )
            if q is not None and q.op_type == "QuantizeLinear" and q.input[0] in inputs:
                found[node.name] = q.input[0]
    return found


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    result = onnx.ModelProto()
    result.CopyFrom(model)
    return result


def _prune(model: onnx.ModelProto) -> None:
    """Drop nodes and initializers nothing reads any more (the Q/DQ of rewired inputs)."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    while True:
        used = outputs | {i for n in graph.node for i in n.input}
        dead = [n for n in graph.node if not any(o in used for o in n.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    used = outputs | {i for n in graph.node for i in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def keep_float(
    qdq: onnx.ModelProto, prepared: onnx.ModelProto, nodes: Iterable[str]
) -> onnx.ModelProto:
    """The Q/DQ model with ``nodes`` computing in FP32 on their float inputs."""
    chosen = set(nodes)
    model = _copy(qdq)
    float_nodes = {n.name: n for n in prepared.graph.node}
    have = {t.name for t in model.graph.initializer}
    weights = {t.name: t for t in prepared.graph.initializer}
    for node in model.graph.node:
        if node.name not in chosen or node.name not in float_nodes:
            continue
        source = float_nodes[node.name]
        del node.input[:]
        node.input.extend(source.input)
        for name in source.input:
            if name in weights and name not in have:
                model.graph.initializer.append(weights[name])
                have.add(name)
        _unquantized_outputs(model, node, source)
    _prune(model)
    return model


def _unquantized_outputs(
    model: onnx.ModelProto, node: onnx.NodeProto, source: onnx.NodeProto
) -> None:
    """A kept node that makes a graph output gives it in FP32: the Q→DQ pair the Q/DQ model put
    between the node and the output (its "…_QuantizeLinear_Input") goes."""
    outputs = {o.name for o in model.graph.output}
    for index, (quantized, plain) in enumerate(zip(node.output, source.output, strict=False)):
        if plain not in outputs or quantized == plain:
            continue
        chain = [n for n in model.graph.node if n.op_type in QDQ_OPS and
                 (quantized in n.input or plain in n.output)]  # fmt: skip
        for dead in chain:
            model.graph.node.remove(dead)
        node.output[index] = plain


def quantize_only(
    qdq: onnx.ModelProto, prepared: onnx.ModelProto, nodes: Iterable[str]
) -> onnx.ModelProto:
    """The fp32 model with only ``nodes`` reading quantized (Q→DQ) inputs, with the full Q/DQ
    model's scales: their Q/DQ producers are copied over, nothing else is quantized."""
    chosen = set(nodes)
    model = _copy(prepared)
    quantized = {n.name: n for n in qdq.graph.node}
    producer = {o: n for n in qdq.graph.node for o in n.output}
    qdq_weights = {t.name: t for t in qdq.graph.initializer}
    have = {t.name for t in model.graph.initializer}
    known = (
        have | {i.name for i in model.graph.input} | {o for n in model.graph.node for o in n.output}
    )
    added: list[onnx.NodeProto] = []
    added_names: set[str] = set()

    def bring(tensor: str) -> None:
        """Copy the Q/DQ chain that makes ``tensor`` in the Q/DQ model, back to known tensors."""
        if tensor in known or tensor in added_names:
            return
        node = producer.get(tensor)
        if node is None:
            if tensor in qdq_weights and tensor not in have:
                model.graph.initializer.append(qdq_weights[tensor])
                have.add(tensor)
            return
        for name in node.input:
            bring(name)
        added.append(node)
        added_names.update(node.output)

    for node in model.graph.node:
        if node.name not in chosen or node.name not in quantized:
            continue
        source = quantized[node.name]
        for name in source.input:
            bring(name)
        del node.input[:]
        node.input.extend(source.input)
    # the Q/DQ nodes go before their consumers: first in the graph is always valid here
    for node in reversed(added):
        model.graph.node.insert(0, node)
    onnx_sort(model)
    return model


def onnx_sort(model: onnx.ModelProto) -> None:
    """Topological order (the Q/DQ chains were added in front; ORT wants producers first)."""
    graph = model.graph
    ready = {t.name for t in graph.initializer} | {i.name for i in graph.input} | {""}
    pending = list(graph.node)
    ordered: list[onnx.NodeProto] = []
    while pending:
        progressed = False
        rest = []
        for node in pending:
            if all(i in ready for i in node.input):
                ordered.append(node)
                ready.update(node.output)
                progressed = True
            else:
                rest.append(node)
        if not progressed:  # a cycle or a missing tensor: leave the order to the checker
            ordered.extend(rest)
            break
        pending = rest
    del graph.node[:]
    graph.node.extend(ordered)


def fp16_variant(prepared: onnx.ModelProto, blocked: Iterable[str]) -> onnx.ModelProto:
    """FP16 everywhere but ``blocked`` nodes (kept FP32), inputs and outputs in FP32."""
    from onnxconverter_common import float16

    converted: onnx.ModelProto = float16.convert_float_to_float16(
        _copy(prepared), keep_io_types=True, node_block_list=list(blocked)
    )
    return converted
