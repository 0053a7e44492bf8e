"""Tolerances as data (Polygraphy's ``CompareFunc.simple`` is the model): per-output rtol/atol
with a ``""`` default, the error statistic chosen by name, a mismatch only where both the
absolute and the relative error exceed their tolerance, and NaN always a mismatch."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.errors import UserError

STATISTICS = ("elemwise", "max", "mean", "median", "quantile")
DEFAULT_REL_L2 = 1e-2
# One default for the CLI, the panel and scripts (the CLI said 1e-5 and the panel 1e-4): FP32
# ONNX Runtime vs eager PyTorch differs by ~1e-5 relative on a ResNet, and rel L2 guards the rest.
DEFAULT_RTOL = DEFAULT_ATOL = 1e-4


@dataclass
class Tolerances:
    rtol: dict[str, float] = field(default_factory=lambda: {"": DEFAULT_RTOL})
    atol: dict[str, float] = field(default_factory=lambda: {"": DEFAULT_ATOL})
    statistic: str = "elemwise"
    quantile: float = 0.99
    # An output's ‖got − want‖ / ‖want‖ at most this (per output; default max(1e-2, rtol)).
    rel_l2: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise UserError(
                f"Unknown error statistic '{self.statistic}'; use one of {', '.join(STATISTICS)}."
            )
        if not 0.0 <= self.quantile <= 1.0:
            raise UserError(f"The quantile must be between 0 and 1, not {self.quantile}.")

    def to_dict(self) -> dict[str, object]:
        return {
            "rtol": self.rtol,
            "atol": self.atol,
            "statistic": self.statistic,
            "quantile": self.quantile,
            "rel_l2": self.rel_l2,
        }

    def rel_l2_for(self, name: str) -> float:
        """The overall-error limit: given per output or by default, else max(1e-2, rtol) —
        loose for FP32 (~1e-7 there) and fp16 (~1e-3), tight for two different models (~1)."""
        if name in self.rel_l2 or "" in self.rel_l2:
            return self.rel_l2.get(name, self.rel_l2.get("", DEFAULT_REL_L2))
        return max(DEFAULT_REL_L2, self.for_output(name)[0])

    def for_output(self, name: str) -> tuple[float, float]:
        return (
            self.rtol.get(name, self.rtol.get("", DEFAULT_RTOL)),
            self.atol.get(name, self.atol.get("", DEFAULT_ATOL)),
        )


def parse_tolerance(values: list[str], default: float | None) -> dict[str, float]:
    """``["1e-4", "logits:1e-3"]`` → ``{"": 1e-4, "logits": 1e-3}`` (no ``""`` entry when
    ``default`` is None: the caller derives it)."""
    result = {} if default is None else {"": default}
    for value in values:
        name, _, number = value.rpartition(":")
        try:
            result[name] = float(number)
        except ValueError:
            raise UserError(f"Tolerance '{value}': use a number or OUTPUT:number.") from None
        if not 0.0 <= result[name] < float("inf"):
            raise UserError(f"Tolerance '{value}': it must be a finite number ≥ 0.")
    return result


def tolerance_args(flag: str, values: dict[str, float], default: float | None) -> list[str]:
    """``{"": 1e-3, "logits": 1e-2}`` → ``["--rtol", "0.001", "--rtol", "logits:0.01"]``,
    leaving out the default."""
    args: list[str] = []
    for name, value in values.items():
        if name == "" and value == default:
            continue
        args += [flag, f"{name}:{value!r}" if name else repr(value)]
    return args
