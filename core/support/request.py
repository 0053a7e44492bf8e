"""The op-support worker requests: the registries, the live TensorRT parser, a sample's ops."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from deploylens.core.requests import Request


@dataclass
class CollectRequest(Request):
    FILES: ClassVar[dict[str, str]] = {"copy_to": "out"}

    refresh: bool = False  # rebuild the cached registries
    copy_to: str = ""  # also write the matrix here (a remote worker's answer, fetched back)


@dataclass
class TensorRTProbeRequest(Request):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}

    path: str
    module: str = "tensorrt"  # or "tensorrt_rtx" (TensorRT-RTX: installs without a GPU)


@dataclass
class TensorRTOpsRequest(Request):
    """Which ONNX op types the installed parser has an importer for (the live matrix column)."""

    module: str = "tensorrt_rtx"


@dataclass
class SampleAtenRequest(Request):
    sample: str


@dataclass
class MeasureRequest(Request):
    """Probes of the measured matrix to ask TensorRT-RTX and ONNX Runtime (none named: all)."""

    keys: list[str] = field(default_factory=list)  # cell keys: ai.onnx::Relu::14::float
    ops: list[str] = field(default_factory=list)  # or every cell of these ops


@dataclass
class MeasuredRequest(Request):
    """The measured matrix's cache file for the panel: only an existing one (the panel opens
    fast), or measured now in a worker of its own (minutes, with progress and cancel)."""

    only_cached: bool = True
    quick: bool = False
    refresh: bool = False
