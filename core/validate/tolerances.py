"""Tolerances as data (Polygraphy's ``CompareFunc.simple`` is the model): per-output rtol/atol
with a ``""`` default, the error statistic chosen by name, a mismatch only where both the
absolute and the relative error exceed their tolerance, and NaN always a mismatch."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.errors import UserError

STATISTICS = ("elemwise", "max", "mean", "median", "quantile")


@dataclass
class Tolerances:
    rtol: dict[str, float] = field(default_factory=lambda: {"": 1e-5})
    atol: dict[str, float] = field(default_factory=lambda: {"": 1e-5})
    statistic: str = "elemwise"
    quantile: float = 0.99

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise UserError(
                f"Unknown error statistic '{self.statistic}'; use one of {', '.join(STATISTICS)}."
            )
        if not 0.0 <= self.quantile <= 1.0:
            raise UserError(f"The quantile must be between 0 and 1, not {self.quantile}.")

    def for_output(self, name: str) -> tuple[float, float]:
        return (
            self.rtol.get(name, self.rtol.get("", 1e-5)),
            self.atol.get(name, self.atol.get("", 1e-5)),
        )


def parse_tolerance(values: list[str], default: float) -> dict[str, float]:
    """``["1e-4", "logits:1e-3"]`` → ``{"": 1e-4, "logits": 1e-3}``."""
    result = {"": default}
    for value in values:
        name, _, number = value.rpartition(":")
        try:
            result[name] = float(number)
        except ValueError:
            raise UserError(f"Tolerance '{value}': use a number or OUTPUT:number.") from None
    return result
