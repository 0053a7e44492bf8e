"""The graph view's worker requests: inferred shapes, and statistics of initializers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from deploylens.core.requests import Request


@dataclass
class ShapesRequest(Request):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}
    READS_WEIGHTS: ClassVar[bool] = False  # shape inference reads no weights

    path: str


@dataclass
class TensorStatsRequest(Request):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}

    path: str
    names: list[str] = field(default_factory=list)  # initializers to summarize
