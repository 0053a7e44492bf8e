"""The live TensorRT probe's contract, driven by a RECORDING FAKE of the tensorrt module:
TensorRT cannot be installed in this workplace. The fake records every call so the tests check
what the adapter asks TensorRT, across the 8.x, 10.x and 11.x APIs."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import onnx

from deploylens.core.trt.probe import probe_model


class FakeTensorRT:
    """Stands in for ``import tensorrt``; not TensorRT. ``api`` picks which parser methods exist."""

    def __init__(self, version: str, api: str, unsupported_ops: set[str]) -> None:
        self.__version__ = version
        self.calls: list[tuple] = []
        fake = self

        class ILogger:  # the adapter subclasses it for its log
            def __init__(self) -> None:
                fake.calls.append(("ILogger",))

        class Logger:
            WARNING = "WARNING"

            def __init__(self, severity: str) -> None:
                fake.calls.append(("Logger", severity))

        class Builder:
            def __init__(self, logger: Logger) -> None:
                fake.calls.append(("Builder",))

            def create_network(self, flags: int) -> str:
                fake.calls.append(("create_network", flags))
                return "network"

        class Parser:
            def __init__(self, network: str, logger: Logger) -> None:
                fake.calls.append(("OnnxParser", network))

            def _split(self, data: bytes) -> list[tuple[list[int], bool]]:
                model = onnx.ModelProto()
                model.ParseFromString(data)
                return [
                    ([i], n.op_type not in unsupported_ops) for i, n in enumerate(model.graph.node)
                ]

        if api == "v2":

            def supports_model_v2(self: Parser, data: bytes) -> bool:
                fake.calls.append(("supports_model_v2", len(data)))
                self.graphs = self._split(data)
                return all(ok for _, ok in self.graphs)

            Parser.supports_model_v2 = supports_model_v2
            Parser.num_subgraphs = property(lambda self: len(self.graphs))
            Parser.is_subgraph_supported = lambda self, i: self.graphs[i][1]
            Parser.get_subgraph_nodes = lambda self, i: self.graphs[i][0]
        elif api == "v1":

            def supports_model(self: Parser, data: bytes) -> tuple[bool, list]:
                fake.calls.append(("supports_model", len(data)))
                graphs = self._split(data)
                return all(ok for _, ok in graphs), graphs

            Parser.supports_model = supports_model
        else:

            def supports_operator(self: Parser, op: str) -> bool:
                fake.calls.append(("supports_operator", op))
                return op not in unsupported_ops

            Parser.supports_operator = supports_operator
        self.Logger, self.Builder, self.OnnxParser = Logger, Builder, Parser
        self.ILogger = ILogger
        self.NetworkDefinitionCreationFlag = SimpleNamespace(EXPLICIT_BATCH=0)


def test_tensorrt_10_uses_supports_model_v2(samples: Path) -> None:
    fake = FakeTensorRT("10.1.0", "v2", {"DeformConv"})
    result = probe_model(onnx.load(samples / "deform_conv.dynamo19.onnx"), fake)
    assert result["api"] == "supports_model_v2" and result["supported"] is False
    assert result["unsupported_nodes"] == ["node_deform_conv2d"]
    assert ("create_network", 0) in fake.calls  # no EXPLICIT_BATCH flag from 10 on


def test_tensorrt_8_uses_supports_model_and_explicit_batch(samples: Path) -> None:
    fake = FakeTensorRT("8.6.1", "v1", set())
    result = probe_model(onnx.load(samples / "small_cnn.dynamo.onnx"), fake)
    assert result["api"] == "supports_model" and result["supported"] is True
    assert ("create_network", 1) in fake.calls


def test_tensorrt_11_falls_back_to_supports_operator(samples: Path) -> None:
    fake = FakeTensorRT("11.4.0", "ops", {"Asinh"})
    result = probe_model(onnx.load(samples / "asinh.dynamo.onnx"), fake)
    assert result["api"] == "supports_operator" and not result["supported"]
    assert sorted(c[1] for c in fake.calls if c[0] == "supports_operator") == ["Asinh", "Mul"]


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
