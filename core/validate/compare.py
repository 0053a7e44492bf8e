"""Compare one output of two runtimes: the statistics a deployment engineer reads first."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from deploylens.core.validate.tolerances import Tolerances

EPS = 1e-12


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

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def compare(
    name: str, got: np.ndarray, want: np.ndarray, tolerances: Tolerances
) -> OutputComparison:
    if got.shape != want.shape:
        return OutputComparison(
            name,
            list(want.shape),
            False,
            float("nan"),
            float("nan"),
            float("nan"),
            float("nan"),
            0.0,
            0,
            0,
            [],
            [],
            f"shape {list(got.shape)} vs expected {list(want.shape)}",
        )
    a = np.asarray(got, dtype=np.float64).ravel()
    b = np.asarray(want, dtype=np.float64).ravel()
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    both_nan = nan_a & nan_b
    abs_err = np.abs(a - b)
    abs_err[both_nan] = 0.0  # NaN where torch has NaN too is agreement, not error
    rel_err = abs_err / np.maximum(np.abs(b), EPS)
    rel_err[both_nan] = 0.0
    passed, within = tolerances.passes(name, abs_err, rel_err)
    finite = np.isfinite(abs_err)
    norm = np.linalg.norm(a[finite]) * np.linalg.norm(b[finite])
    cosine = float(np.dot(a[finite], b[finite]) / norm) if norm > 0 else 1.0
    bins = [0.0] + [10.0**k for k in range(-12, 3)]
    histogram = (
        np.histogram(np.clip(abs_err[finite], 0, 100), bins=bins)[0]
        if finite.any()
        else np.zeros(len(bins) - 1, dtype=int)
    )
    return OutputComparison(
        name=name,
        shape=list(want.shape),
        passed=passed,
        max_abs=float(abs_err[finite].max()) if finite.any() else float("nan"),
        mean_abs=float(abs_err[finite].mean()) if finite.any() else float("nan"),
        max_rel=float(rel_err[finite].max()) if finite.any() else float("nan"),
        cosine=cosine,
        within=within,
        nan=int((nan_a ^ nan_b).sum()),
        inf=int(np.isinf(a).sum() + np.isinf(b).sum()),
        histogram=[int(c) for c in histogram],
        bins=bins,
    )
