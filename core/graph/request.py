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


@dataclass
class TensorStatsRequest(Request["TensorStatsResult"]):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}

    path: str
    names: list[str] = field(default_factory=list)  # initializers to summarize
