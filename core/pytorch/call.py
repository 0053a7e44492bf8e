"""Calling a PyTorch model on the arrays ONNX Runtime was fed: one way for every comparison.

The outputs comparison and the layer-wise pass must call the model alike; when the layer-wise
pass called it by position and the comparison by name, an ``hf:DIR`` model whose export left an
unused input out was compared on two different calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deploylens.core.errors import UserError


def call_torch(module: Any, feeds: dict[str, np.ndarray]) -> Any:
    """``module`` on ``feeds`` without autograd: by name where it names its inputs (an
    ``hf:DIR`` model, whose export may leave an unused input out), else by position in the
    ONNX file's order. An embedding's index error names the input and the fix."""
    import torch

    tensors = {name: torch.from_numpy(np.ascontiguousarray(a)) for name, a in feeds.items()}
    try:
        with torch.no_grad():
            if getattr(module, "input_names", None):
                return module(**tensors)
            return module(*tensors.values())
    except IndexError as exc:
        ints = [n for n, a in feeds.items() if np.issubdtype(a.dtype, np.integer)]
        raise UserError(
            f"PyTorch failed on these inputs: {str(exc).splitlines()[0][:200]} — an integer "
            f"input ({', '.join(ints) or 'none'}) holds an index outside what the model has.",
            "Give the inputs as an .npz (--inputs X.npz), with ids within the vocabulary.",
        ) from None
