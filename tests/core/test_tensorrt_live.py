"""The live TensorRT parser probe (``deploylens support MODEL --target trt-live|trt-rtx``): the
real TensorRT-RTX parser where it is installed (CI installs it), and the RECORDING FAKE of the
classic releases (8.6, 10.x, 11.x cannot be installed here) for their API differences.

The verdict is a parse: blocked nodes are the nodes the parser names in its errors. The
partition (``supports_model_v2``) only says which runs of nodes parsed; its per-run flag is
"the whole model is supported", so reading it as a per-node verdict once blocked the parseable
neighbours of a custom op and missed the op itself."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import onnx
import pytest

from deploylens.core.trt.probe import probe_model
from tests.helpers.fake_tensorrt import make_fake_tensorrt
from tests.helpers.onnx_models import chain_model, custom_op_between_relus, layer_norm_model


@pytest.mark.parametrize("release", ["10.16.0", "8.6.1", "rtx-1.7.1.116", "real-rtx"])
def test_the_blocked_node_is_the_one_the_parser_names(
    release: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    trt = request.getfixturevalue("rtx") if release == "real-rtx" else make_fake_tensorrt(release)
    onnx.save(custom_op_between_relus(), tmp_path / "m.onnx")
    result = probe_model(str(tmp_path / "m.onnx"), trt)
    assert result.supported is False
    assert result.unsupported_nodes == ["f1"]  # not its neighbours r1 and r2
    assert result.partitions == [["r1"], ["r2"]]
    (finding,) = result.findings
    assert (finding.node_name, finding.op, finding.code) == ("f1", "Fancy", "INVALID_NODE")
    assert finding.plugin_searched[-1] == {"name": "Fancy", "version": "1", "namespace": "my"}
    assert "namespace 'my'" in finding.fix and "no DeployLens plugin" in finding.fix


@pytest.mark.parametrize("name", ["custom_op", "chain", "layer_norm"])
def test_the_partition_is_read_from_the_parse_itself_and_equals_supports_model_v2s(
    name: str, tmp_path: Path, rtx: object
) -> None:
    """TensorRT-RTX's parse reports the partition supports_model_v2 does (onnx-tensorrt runs
    the same parse and reportSubgraphs in both): the probe reads it from its one parse instead of
    parsing again (half of ``support --target trt-rtx``'s cost on a 10k-node model). Checked
    here against a second, independent supports_model_v2 parse of the same file."""
    model = {
        "custom_op": custom_op_between_relus,
        "chain": lambda: chain_model(12),
        "layer_norm": layer_norm_model,
    }[name]()
    onnx.save(model, tmp_path / "m.onnx")
    result = probe_model(str(tmp_path / "m.onnx"), rtx, module="tensorrt_rtx")
    assert result.api == "parse_from_file (its partition)"
    trt: Any = rtx
    logger = trt.Logger(trt.Logger.ERROR)
    network = trt.Builder(logger).create_network(0)
    parser = trt.OnnxParser(network, logger)
    whole = parser.supports_model_v2(model.SerializeToString())
    names = [node.name or f"{node.op_type}_{i}" for i, node in enumerate(model.graph.node)]
    runs = [[names[i] for i in parser.get_subgraph_nodes(k)] for k in range(parser.num_subgraphs)]
    assert result.partitions == runs and result.supported is whole
    del parser, network


def test_tensorrt_8_partitions_with_supports_model_and_explicit_batch(samples: Path) -> None:
    trt = make_fake_tensorrt("8.6.1")
    result = probe_model(str(samples / "small_cnn.dynamo.onnx"), trt)
    assert result.api == "parse_from_file + supports_model" and result.supported is True
    assert ("Builder.create_network", 1) in trt.calls


def test_tensorrt_11_lists_ops_without_an_importer(samples: Path) -> None:
    trt = make_fake_tensorrt("11.4.0")
    result = probe_model(str(samples / "asinh.dynamo.onnx"), trt)
    assert result.api == "parse_from_file + supports_operator"
    assert result.ops_without_importer == ["Asinh"]
    assert sorted(a for c, a in trt.calls if c == "OnnxParser.supports_operator") == [
        "Asinh",
        "Mul",
    ]


def test_cli_trt_live_without_tensorrt_gives_the_pip_line(samples: Path) -> None:
    from tests.core.test_cli import DEPLOYLENS

    result = subprocess.run(
        [DEPLOYLENS, "support", str(samples / "asinh.dynamo.onnx"), "--target", "trt-live"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    assert "'tensorrt' is not installed" in result.stderr
    assert "-m pip install tensorrt" in result.stderr
