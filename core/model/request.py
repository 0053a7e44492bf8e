"""The ``model.inspect`` request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.requests import Request

if TYPE_CHECKING:
    from deploylens.core.model.summary import ModelSummary  # noqa: F401


@dataclass
class InspectRequest(Request["ModelSummary"]):
    FILES: ClassVar[dict[str, str]] = {"path": "in"}
    READS_WEIGHTS: ClassVar[bool] = False  # reports where the weights are, reads none

    path: str
    check: bool = True  # run onnx's checker and strict shape inference

    # Its early data (``{PARSED: path}``): the worker has parsed the file and goes on to check
    # and summarize it; the GUI may parse its own copy from then on.
    PARSED: ClassVar[str] = "parsed"


def inspect_request(path: Path) -> tuple[InspectRequest, str]:
    """The job that opens a model in the GUI, and its title in Jobs / Log (``app.open_early``
    starts it before the document exists). Unchecked: the graph's shapes job brings the
    checker's findings after the graph is painted (``ShapesRequest.check``)."""
    return InspectRequest(str(path), check=False), f"Open {path.name}"
