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
    sess: Any, npz: str = "", seed: int = 0, preprocess: str = "", model: Any = None
) -> dict[str, np.ndarray]:
    """The first batch of ``feed_batches`` (layer-wise comparison, profiling)."""
    return next(feed_batches(sess, npz, seed, preprocess, model))


def feed_batches(
    sess: Any,
    npz: str = "",
    seed: int = 0,
    preprocess: str = "",
    model: Any = None,
    notes: list[str] | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """Inputs batch by batch: every batch of a data folder (images with a preprocessing spec, or
    arrays), the one batch of an ``.npz`` (no pickles), or one seeded random batch matching the
    model's inputs (``model``: its ModelProto, whose embeddings bound integer ids). ``notes``
    gets what was given and not used (an ``.npz``'s arrays no input takes)."""
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
        unused = [name for name in data if name not in arrays]
        if unused and notes is not None:
            notes.append(
                f"{Path(npz).name}: {len(unused)} array(s) no input of the model takes, ignored: "
                + ", ".join(repr(name) for name in unused[:5])
                + (" …" if len(unused) > 5 else "")
            )
        for part in _per_batch(arrays, metas, Path(npz).name):
            yield fitted_feeds(part, metas, Path(npz).name)
        return
    yield random_feeds(metas, seed, integer_ranges(model, metas))


def random_feeds(
    metas: list[Any], seed: int, ranges: dict[str, tuple[int, int, str]]
) -> dict[str, np.ndarray]:
    """One seeded batch shaped from the model's inputs (a free dimension is 1): floats uniform
    in [-1, 1], integers in the range ``integer_ranges`` gives them, booleans 0/1."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
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
            low, high, _ = ranges.get(meta.name, DEFAULT_INTEGERS)
            feeds[meta.name] = rng.integers(low, high + 1, shape).astype(dtype)
    return feeds


DEFAULT_INTEGERS = (0, 9, "")


def integer_ranges(model: Any, metas: list[Any]) -> dict[str, tuple[int, int, str]]:
    """What each integer input holds, by its meaning: ids index an embedding (a Gather whose
    table is a weight — [0, rows − 1], the vocabulary), a mask is all ones, token types 0;
    else [0, 9]. Each with the words that say so."""
    tables = _gathered_rows(model) if model is not None else {}
    ranges: dict[str, tuple[int, int, str]] = {}
    for meta in metas:
        dtype = ORT_DTYPES.get(meta.type)
        if dtype is None or not np.issubdtype(dtype, np.integer):
            continue
        name = meta.name.lower()
        if meta.name in tables:
            rows = tables[meta.name]
            ranges[meta.name] = (0, rows - 1, f"the {rows} rows of the embedding it indexes")
        elif "mask" in name:
            ranges[meta.name] = (1, 1, "a mask")
        elif "type" in name or "segment" in name:
            ranges[meta.name] = (0, 0, "token types")
    return ranges


def _gathered_rows(model: Any) -> dict[str, int]:
    """Graph inputs used as Gather indices into a weight (directly or through a Cast,
    Reshape, Unsqueeze or Flatten): the weight's row count."""
    graph = model.graph
    weights = {t.name: list(t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output and node.attribute:
            value = node.attribute[0]
            if value.HasField("t"):
                weights[node.output[0]] = list(value.t.dims)
    passthrough = ("Cast", "Reshape", "Unsqueeze", "Flatten", "Squeeze")
    origin = {i.name: i.name for i in graph.input}
    rows: dict[str, int] = {}
    for node in graph.node:
        if node.op_type in passthrough and node.input and node.input[0] in origin:
            for out in node.output:
                origin[out] = origin[node.input[0]]
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in origin:
            table = weights.get(node.input[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if table and axis == 0 and table[0] > 0:
                source = origin[node.input[1]]
                rows[source] = min(rows.get(source, table[0]), table[0])
    return rows


def random_sentence(metas: list[Any], seed: int, model: Any = None) -> str:
    """What ``random_feeds`` drew, input by input (the report's "inputs used" line)."""
    ranges = integer_ranges(model, metas) if model is not None else {}
    parts = []
    for meta in metas:
        dtype = ORT_DTYPES.get(meta.type)
        if dtype is None:
            continue
        if np.issubdtype(dtype, np.floating):
            parts.append(f"{meta.name} uniform in [-1, 1]")
        elif dtype is np.bool_:
            parts.append(f"{meta.name} random booleans")
        else:
            low, high, why = ranges.get(meta.name, DEFAULT_INTEGERS)
            span = f"all {low}" if low == high else f"integers in [{low}, {high}]"
            parts.append(f"{meta.name} {span}" + (f" ({why})" if why else ""))
    return f"one batch of seeded random inputs (seed {seed}): " + "; ".join(parts)


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
