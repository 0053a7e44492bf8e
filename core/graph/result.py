"""The graph view's worker jobs' typed results: inferred shapes, initializer statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.results import Result

Shape = list[int | str | None]


@dataclass
class ShapesResult(Result):
    """``graph.shapes``: element type and shape of every tensor inference worked out."""

    shapes: dict[str, tuple[str, Shape | None]] = field(default_factory=dict)
    error: str = ""  # inference gave up on this model (it still opens, without shapes)


@dataclass
class InitializerStats:
    """min/max/mean/std in float64 over the finite values; NaN and Inf counted."""

    elements: int
    nan: int = 0
    inf: int = 0
    min: float | None = None  # None: not numeric, empty, or no finite value
    max: float | None = None
    mean: float | None = None
    std: float | None = None

    def text(self) -> str:
        """The properties panel's cell: "min -0.1, max 0.2, mean 0, std 0.05, 3 NaN/Inf"."""
        values = {"min": self.min, "max": self.max, "mean": self.mean, "std": self.std}
        text = ", ".join(f"{k} {v:.4g}" for k, v in values.items() if v is not None)
        bad = self.nan + self.inf
        return text + (f", {bad} NaN/Inf" if bad else "")


@dataclass
class TensorStatsResult(Result):
    """``graph.tensor_stats``: the statistics of each initializer asked for."""

    stats: dict[str, InitializerStats] = field(default_factory=dict)
