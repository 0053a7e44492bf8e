"""``.npy``/``.npz`` arrays from the user, loaded without pickles and explained when refused.

numpy stores object arrays as pickles; ``allow_pickle=False`` refuses them with numpy's own
sentence, which used to surface as an internal error. Every array the user gives (validation
inputs, calibration data, export example inputs) is read here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import input_file


def load_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """``{name: array}`` from an ``.npz``, or ``{"": array}`` from an ``.npy`` (all in memory)."""
    path = input_file(path, "NumPy array")
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            return {"": loaded}
        with loaded:
            return {name: loaded[name] for name in loaded.files}
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise UserError(
                f"{path.name} holds Python objects (an object array stored as a pickle): "
                "DeployLens loads plain numeric arrays only, since unpickling can run code.",
                "Save numeric arrays: np.savez(path, input=array.astype(np.float32)).",
            ) from None
        raise UserError(f"{path.name} is not a readable NumPy file: {exc}.") from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise UserError(f"{path.name} is not a readable NumPy file: {exc}.") from None
