"""The op-support worker requests: the registries, the live TensorRT parser, a sample's ops."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.requests import Request

if TYPE_CHECKING:
    from deploylens.core.support.measured_types import MeasuredMatrix  # noqa: F401
    from deploylens.core.support.result import (  # noqa: F401
        MeasuredCache,
        OperatorImporters,
        ParserProbe,
        RegistryCache,
        SampleAtenOps,
    )


@dataclass
class CollectRequest(Request["RegistryCache"]):
    FILES: ClassVar[dict[str, str]] = {"copy_to": "out"}

    refresh: bool = False  # rebuild the cached registries
    copy_to: str = ""  # also write the matrix here (a remote worker's answer, fetched back)


@dataclass
class TensorRTProbeRequest(Request["ParserProbe"]):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}

    path: str
    module: str = "tensorrt"  # or "tensorrt_rtx" (TensorRT-RTX: installs without a GPU)


@dataclass
class TensorRTOpsRequest(Request["OperatorImporters"]):
    """Which ONNX op types the installed parser has an importer for (the live matrix column)."""

    module: str = "tensorrt_rtx"


@dataclass
class SampleAtenRequest(Request["SampleAtenOps"]):
    sample: str


@dataclass
class MeasureRequest(Request["MeasuredMatrix"]):
    """Probes of the measured matrix to ask TensorRT-RTX and ONNX Runtime (none named: all)."""

    keys: list[str] = field(default_factory=list)  # cell keys: ai.onnx::Relu::14::float
    ops: list[str] = field(default_factory=list)  # or every cell of these ops


@dataclass
class MeasuredRequest(Request["MeasuredCache"]):
    """The measured matrix's cache file for the panel: only an existing one (the panel opens
    fast), or measured now in a worker of its own (minutes, with progress and cancel)."""

    only_cached: bool = True
    quick: bool = False
    refresh: bool = False
