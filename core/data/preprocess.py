"""Real inputs from a folder: images with a preprocessing spec, or ``.npy``/``.npz`` arrays.

Validation and INT8 calibration both need "the data the model will see", not random noise. A
spec is one line, so it fits a CLI flag, a project table and a trtexec-style reproducer::

    resize=256,crop=224,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,scale=1/255,layout=NCHW

``imagenet`` is that line. Arrays are taken as they are (``.npz``: one array per input name).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.data.arrays import load_arrays
from deploylens.core.errors import UserError
from deploylens.core.files import input_file

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".webp", ".tif", ".tiff"}
ARRAY_SUFFIXES = {".npy", ".npz"}
PRESETS = {
    "imagenet": "resize=256,crop=224,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,scale=1/255",
    "unit": "scale=1/255",
}


@dataclass
class Preprocess:
    resize: int | tuple[int, int] | None = None  # int: shorter side; (H, W): exact
    crop: tuple[int, int] | None = None  # centre crop (H, W)
    mean: list[float] = field(default_factory=lambda: [0.0])
    std: list[float] = field(default_factory=lambda: [1.0])
    scale: float = 1.0 / 255.0
    layout: str = "NCHW"
    order: str = "RGB"

    def to_spec(self) -> str:
        parts = []
        if self.resize is not None:
            size = self.resize
            parts.append(f"resize={size if isinstance(size, int) else f'{size[0]}x{size[1]}'}")
        if self.crop is not None:
            parts.append(f"crop={self.crop[0]}x{self.crop[1]}")
        parts.append("mean=" + "/".join(f"{m:g}" for m in self.mean))
        parts.append("std=" + "/".join(f"{s:g}" for s in self.std))
        parts.append(f"scale={self.scale!r}")
        parts.append(f"layout={self.layout}")
        parts.append(f"order={self.order}")
        return ",".join(parts)


def _size(text: str) -> tuple[int, int]:
    h, _, w = text.lower().partition("x")
    return int(h), int(w or h)


def parse_preprocess(spec: str) -> Preprocess:
    """``"imagenet"`` or ``key=value,…`` (keys: resize crop mean std scale layout order)."""
    spec = PRESETS.get(spec.strip(), spec.strip())
    result = Preprocess()
    for item in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            if key == "resize":
                result.resize = int(value) if "x" not in value else _size(value)
            elif key == "crop":
                result.crop = _size(value)
            elif key in ("mean", "std"):
                setattr(result, key, [float(v) for v in value.split("/")])
            elif key == "scale":
                num, _, den = value.partition("/")
                result.scale = float(num) / float(den or 1)
            elif key == "layout" and value.upper() in ("NCHW", "NHWC"):
                result.layout = value.upper()
            elif key == "order" and value.upper() in ("RGB", "BGR"):
                result.order = value.upper()
            else:
                raise ValueError
        except ValueError:
            raise UserError(
                f"Preprocessing '{item}' is not understood: use resize=N|HxW, crop=HxW, "
                "mean=a/b/c, std=a/b/c, scale=1/255, layout=NCHW|NHWC, order=RGB|BGR, "
                f"or a preset ({', '.join(PRESETS)})."
            ) from None
    if 0.0 in result.std:
        raise UserError("Preprocessing: std must not be 0.")
    return result


def load_image(path: Path, spec: Preprocess) -> np.ndarray:
    """One image as a float32 array (C, H, W) or (H, W, C) following ``spec``."""
    try:
        from PIL import Image
    except ModuleNotFoundError:
        raise UserError(
            "Reading images needs Pillow: pip install pillow (or give .npy/.npz arrays)."
        ) from None
    input_file(path, "image")  # a FIFO named x.png would block Pillow's open
    try:
        with Image.open(path) as opened:
            image = opened.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise UserError(f"{path.name} is not a readable image: {exc}.") from None
    if spec.resize is not None:
        if isinstance(spec.resize, int):
            w, h = image.size
            short, long = min(w, h), max(w, h)
            long = int(spec.resize * long / short)  # truncated, as torchvision's Resize does
            target = (spec.resize, long) if w <= h else (long, spec.resize)
            image = image.resize(target, Image.Resampling.BILINEAR)
        else:
            image = image.resize((spec.resize[1], spec.resize[0]), Image.Resampling.BILINEAR)
    if spec.crop is not None:
        w, h = image.size
        ch, cw = spec.crop
        if ch > h or cw > w:
            raise UserError(f"{path.name}: crop {ch}x{cw} is larger than the image ({h}x{w}).")
        left, top = round((w - cw) / 2), round((h - ch) / 2)  # as torchvision's CenterCrop
        image = image.crop((left, top, left + cw, top + ch))
    array: np.ndarray = np.asarray(image, dtype=np.float32) * np.float32(spec.scale)
    if spec.order == "BGR":
        array = array[..., ::-1]
    array = (array - np.asarray(spec.mean, np.float32)) / np.asarray(spec.std, np.float32)
    if spec.layout == "NCHW":
        array = array.transpose(2, 0, 1)
    return np.ascontiguousarray(array, dtype=np.float32)


def list_samples(folder: str | Path) -> list[Path]:
    """The sample files of a data folder, or the one ``.npz``/``.npy`` given instead of one."""
    folder = Path(folder)
    if folder.is_file() and folder.suffix.lower() in ARRAY_SUFFIXES:
        return [folder]
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder of images or arrays, nor an .npz/.npy.")
    files = sorted(
        p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES | ARRAY_SUFFIXES
    )
    if not files:
        raise UserError(
            f"{folder} has no images ({', '.join(sorted(IMAGE_SUFFIXES))}) or .npy/.npz files."
        )
    return files


def iter_samples(
    folder: str | Path, inputs: list[tuple[str, list[Any]]], spec: Preprocess | None = None
) -> Iterator[dict[str, np.ndarray]]:
    """One ``{input name: array without the batch axis}`` per file, in name order.

    Images feed the first input; ``.npy`` too (a single-input model); ``.npz`` names its inputs.
    """
    spec = spec or Preprocess()
    first = inputs[0][0]
    for path in list_samples(folder):
        suffix = path.suffix.lower()
        if suffix in IMAGE_SUFFIXES:
            yield {first: load_image(path, spec)}
            continue
        data = load_arrays(path)
        if suffix == ".npy":
            data = {first: data[""]}
        missing = [name for name, _ in inputs if name not in data]
        if missing:
            raise UserError(f"{path.name} has no array for input '{missing[0]}'.")
        for name, _ in inputs:
            if data[name].dtype.kind not in "biuf":
                raise UserError(
                    f"{path.name}: array '{name}' holds {data[name].dtype} values, not numbers."
                )
            if data[name].dtype.kind == "f" and not np.isfinite(data[name]).all():
                bad = int(np.size(data[name]) - np.count_nonzero(np.isfinite(data[name])))
                raise UserError(
                    f"{path.name}: array '{name}' holds {bad:,} NaN or infinite value(s): "
                    "calibration and comparison need finite numbers."
                )
        arrays = {name: data[name] for name, _ in inputs}
        ranked = [len(shape) for _, shape in inputs]
        rows = {int(a.shape[0]) for a, rank in zip(arrays.values(), ranked, strict=True)
                if a.ndim == rank and rank}  # fmt: skip
        if len(rows) == 1 and all(
            a.ndim == r and r for a, r in zip(arrays.values(), ranked, strict=True)
        ):
            # a file holding a batch axis: its samples one by one (re-batched by the caller)
            for row in range(rows.pop()):
                yield {name: array[row] for name, array in arrays.items()}
            continue
        yield arrays


def sample_count(folder: str | Path, inputs: list[tuple[str, list[Any]]]) -> int:
    """How many samples ``iter_samples`` gives: an image is one, an array file with the
    model's rank as many as its first axis (only array files are opened)."""
    total = 0
    rank = len(inputs[0][1])
    for path in list_samples(folder):
        if path.suffix.lower() in IMAGE_SUFFIXES:
            total += 1
            continue
        data = load_arrays(path)
        first = data.get(inputs[0][0], data.get(""))
        total += int(first.shape[0]) if first is not None and first.ndim == rank and rank else 1
    return total


def batch_size(shape: list[Any], requested: int | None = None) -> int:
    """The batch an input takes: its fixed leading dim, else ``requested``, else 1. Asking for
    another batch than a fixed one is the user's error, said before any data is read."""
    fixed = shape[0] if shape and isinstance(shape[0], int) and shape[0] > 0 else None
    if requested and fixed and requested != fixed:
        raise UserError(
            f"The model's batch axis is fixed at {fixed}; a batch of {requested} cannot feed it "
            "(re-export with a dynamic batch)."
        )
    return requested or fixed or 1


def batches(
    folder: str | Path,
    inputs: list[tuple[str, list[Any]]],
    batch_size: int,
    spec: Preprocess | None = None,
    limit: int | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """Samples stacked into batches of ``batch_size`` (a per-sample array that already has the
    model's rank is taken as a batch of its own)."""
    pending: list[dict[str, np.ndarray]] = []
    produced = 0
    for sample in iter_samples(folder, inputs, spec):
        if limit is not None and produced >= limit:
            return
        ranks = {name: len(shape) for name, shape in inputs}
        if all(sample[n].ndim == ranks[n] for n in sample):
            yield _check(sample, inputs, folder)
            produced += 1
            continue
        pending.append(sample)
        if len(pending) == batch_size:
            yield _check(_stacked(pending, folder), inputs, folder)
            produced += 1
            pending = []
    if pending and (limit is None or produced < limit):
        yield _check(_stacked(pending, folder), inputs, folder)


def _stacked(samples: list[dict[str, np.ndarray]], folder: str | Path) -> dict[str, np.ndarray]:
    """Samples of one batch stacked; samples of different shapes are the folder's problem."""
    try:
        return {n: np.stack([s[n] for s in samples]) for n in samples[0]}
    except ValueError:
        shapes = ", ".join(sorted({str(list(s[n].shape)) for s in samples for n in s}))
        raise UserError(
            f"{Path(folder).name}/: samples of one batch have different shapes ({shapes})."
        ) from None


def _check(
    feeds: dict[str, np.ndarray], inputs: list[tuple[str, list[Any]]], folder: str | Path = ""
) -> dict[str, np.ndarray]:
    for name, shape in inputs:
        array = feeds[name]
        if len(shape) != array.ndim or any(
            isinstance(d, int) and d > 0 and d != s for d, s in zip(shape, array.shape, strict=True)
        ):
            raise UserError(
                f"{Path(folder).name}/: input '{name}' wants shape {shape} but the data gives "
                f"{list(array.shape)}: check the preprocessing (resize/crop/layout)."
            )
    return feeds
