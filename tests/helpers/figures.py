"""Results from two processes compared as figures, never bit for bit: the same validation run
here and through the ssh worker gave cosine 1.0 and 1.0000000000000002 (different environments
round the last bit differently). Text, integers and structure must be equal; floats close."""

from __future__ import annotations

import math
from typing import Any

REL_TOL = 1e-9
ABS_TOL = 1e-12


def assert_same_figures(ours: Any, theirs: Any, where: str = "result") -> None:
    """``ours`` and ``theirs`` hold the same keys, items and text, and floats within
    ``REL_TOL`` (NaN equals NaN); the first difference is named by its path."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        assert ours.keys() == theirs.keys(), f"{where}: keys {sorted(ours)} vs {sorted(theirs)}"
        for key in ours:
            assert_same_figures(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list) and isinstance(theirs, list):
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items vs {len(theirs)}"
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same_figures(a, b, f"{where}[{index}]")
    elif isinstance(ours, float) or isinstance(theirs, float):
        assert isinstance(ours, int | float) and isinstance(theirs, int | float), where
        both_nan = math.isnan(ours) and math.isnan(theirs)
        assert both_nan or math.isclose(ours, theirs, rel_tol=REL_TOL, abs_tol=ABS_TOL), (
            f"{where}: {ours!r} vs {theirs!r}"
        )
    else:
        assert ours == theirs, f"{where}: {ours!r} vs {theirs!r}"
