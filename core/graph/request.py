"""The graph view's worker requests: inferred shapes, and statistics of initializers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.requests import Request

if TYPE_CHECKING:
    from deploylens.core.graph.result import ShapesResult, TensorStatsResult  # noqa: F401


@dataclass
class ShapesRequest(Request["ShapesResult"]):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}
    READS_WEIGHTS: ClassVar[bool] = False  # shape inference reads no weights

    path: str
    # also onnx's checker and strict shape inference (the GUI opens a model unchecked and asks
    # here, after its graph is painted: on a 100k-node model they are ~0.6 s of CPU)
    check: bool = False


@dataclass
class TensorStatsRequest(Request["TensorStatsResult"]):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}

    path: str
    names: list[str] = field(default_factory=list)  # initializers to summarize
