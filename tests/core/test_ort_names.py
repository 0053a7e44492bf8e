"""Optimized ONNX Runtime profiles link back to the model: real sessions at each optimization
level, node names as ORT 1.31 writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from deploylens.core.trace.capture import CaptureSettings, capture_ort
from deploylens.core.trace.chrome_file import load_chrome
from deploylens.core.trace.links import node_latency
from deploylens.core.trace.ort_names import alias_of, ort_aliases, remap_latency


def _profile(model: Path, level: str, out: Path) -> Path:
    """One profiled run at an optimization level (capture_ort always uses ORT's default: all)."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(out / level)
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    feed = {i.name: np.random.rand(1, 3, 32, 32).astype(np.float32) for i in session.get_inputs()}
    session.run(None, feed)
    return Path(session.end_profiling())


@pytest.mark.parametrize("sample", ["small_cnn.dynamo.onnx", "small_cnn.torchscript.onnx"])
def test_every_optimized_node_name_maps_to_model_nodes(
    samples: Path, tmp_path: Path, sample: str
) -> None:
    model = samples / sample
    graph = onnx.load(model).graph
    names = {n.name for n in graph.node}
    convs = [n.name for n in graph.node if n.op_type == "Conv"]
    capture_ort(str(model), str(tmp_path / "all.json"), CaptureSettings(iterations=2))  # level: all
    trace = load_chrome(tmp_path / "all.json")
    aliases = ort_aliases(trace, graph)
    assert any(event.endswith("_nchwc") for event in aliases)  # NCHWc kernels were made
    for event, nodes in aliases.items():
        assert set(nodes) <= names, event
        assert nodes or event.startswith("Reorder"), event  # only layout changes map to nothing
    for conv in convs:  # each Conv ran inside a renamed NCHWc kernel, with its Relu
        (event,) = alias_of(conv, aliases)
        relu = aliases[event][-1]
        assert aliases[event][0] == conv and relu in names and relu != conv
    latency = remap_latency(node_latency(trace), aliases)
    assert set(convs) <= set(latency) and set(latency) <= names  # every key paints a node

    extended = load_chrome(_profile(model, "ORT_ENABLE_EXTENDED", tmp_path))
    fused = ort_aliases(extended, graph)  # FusedConv keeps the Conv's name, absorbs the Relu
    assert sorted(fused) == sorted(convs)
    assert all(len(nodes) == 2 and nodes[0] == conv for conv, nodes in fused.items())
    assert ort_aliases(load_chrome(_profile(model, "ORT_ENABLE_BASIC", tmp_path)), graph) == {}
