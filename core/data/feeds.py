"""Model inputs as ONNX Runtime feeds: from the user's data (a folder of images/arrays, an
.npz/.npy) checked against the model's inputs, or seeded random ones. Validation, calibration's
accuracy check and profiling all feed models from here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError

ORT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def make_feeds(
    sess: Any, npz: str = "", seed: int = 0, preprocess: str = ""
) -> dict[str, np.ndarray]:
    """The first batch of ``feed_batches`` (layer-wise comparison, profiling)."""
    return next(feed_batches(sess, npz, seed, preprocess))


def feed_batches(
    sess: Any, npz: str = "", seed: int = 0, preprocess: str = ""
) -> Iterator[dict[str, np.ndarray]]:
    """Inputs batch by batch: every batch of a data folder (images with a preprocessing spec, or
    arrays), the one batch of an ``.npz`` (no pickles), or one seeded random batch matching the
    model's inputs."""
    metas = sess.get_inputs()
    if npz and Path(npz).is_dir():
        from deploylens.core.data.preprocess import batch_size, batches, parse_preprocess

        inputs = [(m.name, list(m.shape)) for m in metas]
        spec = parse_preprocess(preprocess) if preprocess else None
        for feeds in batches(npz, inputs, batch_size(inputs[0][1]), spec):
            yield fitted_feeds(feeds, metas, f"{Path(npz).name}/")
        return
    if npz:
        from deploylens.core.data.arrays import load_arrays

        data = load_arrays(npz)
        if "" in data and len(metas) == 1:  # an .npy feeds a single-input model
            data = {metas[0].name: data[""]}
        missing = [i.name for i in metas if i.name not in data]
        if missing:
            raise UserError(
                f"{Path(npz).name} has no array for input '{missing[0]}' "
                f"(it has {', '.join(data) or 'none'})."
            )
        arrays = {i.name: data[i.name] for i in metas}
        for part in _per_batch(arrays, metas, Path(npz).name):
            yield fitted_feeds(part, metas, Path(npz).name)
        return
    rng = np.random.default_rng(seed)
    feeds = {}
    for meta in metas:
        dtype = ORT_DTYPES.get(meta.type)
        if dtype is None:
            raise UserError(f"Input '{meta.name}' is {meta.type}: give its values in an .npz.")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in meta.shape]
        if np.issubdtype(dtype, np.floating):
            feeds[meta.name] = rng.uniform(-1, 1, shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[meta.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[meta.name] = rng.integers(0, 10, shape).astype(dtype)
    yield feeds


def _per_batch(
    arrays: dict[str, np.ndarray], metas: list[Any], name: str
) -> Iterator[dict[str, np.ndarray]]:
    """An ``.npz`` of N samples for a model whose batch is fixed at b: N / b batches (it was
    refused as "shaped [16, …]; the model takes [1, …]"); anything else, the arrays as they are."""
    fixed = {m.name: m.shape[0] for m in metas if m.shape and isinstance(m.shape[0], int)}
    sizes = {
        int(arrays[m.name].shape[0])
        for m in metas
        if arrays[m.name].ndim == len(m.shape) and arrays[m.name].ndim
    }
    batch = set(fixed.values())
    if len(sizes) != 1 or len(batch) != 1 or len(fixed) != len(metas):
        yield arrays
        return
    count, size = sizes.pop(), batch.pop()
    if size <= 0 or count == size:
        yield arrays
        return
    if count % size:
        raise UserError(
            f"{name} holds {count} samples, which do not split into the model's fixed batch of "
            f"{size}."
        )
    for start in range(0, count, size):
        yield {key: value[start : start + size] for key, value in arrays.items()}


def fitted_feeds(
    feeds: dict[str, np.ndarray], metas: list[Any], source: str
) -> dict[str, np.ndarray]:
    """Arrays checked against the model's inputs before ONNX Runtime sees them (it answered
    with an internal "Invalid rank" or "Numpy_type 14" error): the rank and every fixed dim
    must match, and the element kind; within a kind (float64 → float32) values are cast."""
    fitted: dict[str, np.ndarray] = {}
    for meta in metas:
        array = np.asarray(feeds[meta.name])
        want = ORT_DTYPES.get(meta.type)
        where = f"{source}: input '{meta.name}'"
        shape = list(meta.shape)
        if array.ndim != len(shape) or any(
            isinstance(d, int) and d > 0 and d != s
            for d, s in zip(shape, array.shape, strict=False)
        ):
            wanted = [d if isinstance(d, int) and d > 0 else "?" for d in shape]
            raise UserError(f"{where} is shaped {list(array.shape)}; the model takes {wanted}.")
        if want is None:
            raise UserError(f"{where} is {meta.type}, which DeployLens cannot feed.")
        kind, wanted_kind = array.dtype.kind, np.dtype(want).kind
        same = kind == wanted_kind or {kind, wanted_kind} <= {"i", "u"}
        if not same or kind not in "biuf":
            raise UserError(
                f"{where} holds {array.dtype} values; the model takes {np.dtype(want)}."
            )
        fitted[meta.name] = array.astype(want, copy=False)
    return fitted


def batch_of(feeds: dict[str, np.ndarray]) -> int:
    first = next(iter(feeds.values()), None)
    return int(first.shape[0]) if first is not None and first.ndim else 1


def take_samples(batches: Any, limit: int) -> list[dict[str, Any]]:
    """Whole batches until ``limit`` samples are reached (the last one may pass it)."""
    taken: list[dict[str, Any]] = []
    count = 0
    for feeds in batches:
        if count >= limit:
            break
        taken.append(feeds)
        first = next(iter(feeds.values()))
        count += int(first.shape[0]) if first.ndim else 1
    return taken
