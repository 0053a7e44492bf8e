"""The validation's result records: plain data, no NumPy, so the CLI that prints them and the
GUI that shows them do not import NumPy to read a result (0.2 s of CPU a validate command
paid in its own process). ``compare`` and ``layerwise`` fill them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class OutputComparison:
    name: str
    shape: list[int]
    passed: bool
    max_abs: float
    mean_abs: float
    max_rel: float
    cosine: float
    within: float  # fraction of elements within tolerance
    nan: int  # NaN in either side, or where only one side has it
    inf: int
    histogram: list[int]  # counts of |error| per decade bucket
    bins: list[float]  # bucket edges (powers of ten)
    reason: str = ""
    rel_l2: float = float("nan")  # ‖got − want‖ / ‖want‖, comparable across scales
    ref_max_abs: float = float("nan")  # largest finite |reference value|: the output's scale
    got_max_abs: float = float("nan")
    batches: int = 1
    inconclusive: bool = False  # nothing to compare (both sides essentially zero): not a FAIL
    values: int = 0  # elements compared
    no_number: int = 0  # of them, those NaN or inf on both sides (agreeing, but no number)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class LayerResult:
    tensor: str
    node: str
    op_type: str
    index: int
    module: str
    note: str
    passed: bool
    max_abs: float
    mean_abs: float
    max_rel: float
    rel_l2: float  # ‖got − want‖ / ‖want‖: comparable across layers of any scale
    cosine: float
    within: float
    nan: int
    error_in: float  # the largest rel_l2 reaching this node from upstream compared tensors
    jump: float  # rel_l2 − error_in: where the error is made, not merely carried
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Unmapped:
    """A module call the mapping could not tie to an ONNX tensor, and why."""

    module: str
    reason: str


@dataclass
class Layerwise:
    """The layer-by-layer part of a validation: every compared tensor in topological order."""

    mode: str  # "torch modules" | "onnx tensors"
    mapping: str
    compared: int
    mapped_calls: int
    unmapped: list[Unmapped]
    first_diverging: LayerResult | None
    layers: list[LayerResult]
    chunks: int
    largest_chunk_mb: float
    budget_mb: float
    seconds: float
    inputs_used: str = ""  # said when the outputs were compared on more batches than this one
