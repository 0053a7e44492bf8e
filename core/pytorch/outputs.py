"""PyTorch outputs as NumPy arrays (the comparisons' common form)."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_numpy_list(value: Any) -> list[np.ndarray]:
    """Torch outputs (tensor, tuple, nested lists) as a flat list of arrays, in output order."""
    if isinstance(value, list | tuple):
        return [a for v in value for a in to_numpy_list(v)]
    return [value.detach().cpu().numpy()] if hasattr(value, "detach") else [np.asarray(value)]
