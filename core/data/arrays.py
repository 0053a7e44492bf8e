"""``.npy``/``.npz`` arrays from the user, loaded without pickles and explained when refused.

numpy stores object arrays as pickles; ``allow_pickle=False`` refuses them with numpy's own
sentence, which used to surface as an internal error. A header may also claim more data than the
file holds (numpy then reserves the claimed size before reading), or be garbage that numpy's
header tokenizer fails on in several ways. Every array the user gives (validation inputs,
calibration data, export example inputs) is read here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from deploylens.core.archive_bounds import check_inflation
from deploylens.core.errors import UserError
from deploylens.core.files import input_file


def _declared_bytes(handle: IO[bytes]) -> int:
    """The data size an .npy header declares (numpy reserves it before reading)."""
    version = np.lib.format.read_magic(handle)
    reader = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, _, dtype = reader(handle)
    if dtype.hasobject:
        return 0  # refused as a pickle by np.load below
    return int(np.prod(shape, dtype=np.float64) * dtype.itemsize)


def _check_sizes(path: Path) -> None:
    """The archive's inflated size bounded before anything inflates (``archive_bounds``), and
    each array's declared size against the bytes that hold it."""
    if path.suffix.lower() == ".npz" or zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            check_inflation(archive, path.name, path.stat().st_size)
            for info in archive.infolist():
                with archive.open(info) as member:
                    declared = _declared_bytes(member)
                if declared > info.file_size:
                    raise UserError(
                        f"{path.name}: array '{info.filename.removesuffix('.npy')}' declares "
                        f"{declared:,.0f} bytes but holds {info.file_size:,}: the file is corrupt."
                    )
        return
    with open(path, "rb") as handle:
        declared = _declared_bytes(handle)
        if declared > path.stat().st_size:
            raise UserError(
                f"{path.name} declares {declared:,.0f} bytes of data but is "
                f"{path.stat().st_size:,} bytes long: the file is corrupt."
            )


def load_arrays(given: str | Path) -> dict[str, np.ndarray]:
    """``{name: array}`` from an ``.npz``, or ``{"": array}`` from an ``.npy`` (all in memory)."""
    path = input_file(given, "NumPy array")
    try:
        _check_sizes(path)
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            return {"": loaded}
        with loaded:
            return {name: loaded[name] for name in loaded.files}
    except UserError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise UserError(
                f"{path.name} holds Python objects (an object array stored as a pickle): "
                "DeployLens loads plain numeric arrays only, since unpickling can run code.",
                "Save numeric arrays: np.savez(path, input=array.astype(np.float32)).",
            ) from None
        raise UserError(f"{path.name} is not a readable NumPy file: {exc}.") from None
    except MemoryError:
        raise UserError(f"{path.name} holds arrays too large to load here.") from None
    except Exception as exc:  # numpy's header parser fails in many ways on garbage
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{path.name} is not a readable NumPy file: {reason}.") from None


def read_labels(path: str) -> np.ndarray:
    """Class indices for top-1 agreement: one 1-D integer array (an .npy, or an .npz of one)."""
    arrays = load_arrays(path)
    if len(arrays) != 1:
        raise UserError(f"{Path(path).name}: --labels takes one array of class indices.")
    labels = next(iter(arrays.values()))
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise UserError(f"{Path(path).name}: --labels must be a 1-D array of class indices.")
    return labels.astype(np.int64)
