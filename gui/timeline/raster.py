"""Rasterize the visible part of a trace into one RGBA image with NumPy: the timeline paints a
single ``drawImage`` per frame, whatever the event count (DESIGN.md §5: never an item per event).

Per row and per pixel column: events at least ~1.5 px wide are painted as spans (their last
column darkened so neighbours stay distinct); narrower events are aggregated into the column
they fall in — colour of the kind with the most time there, opacity by how busy the column is
(the density view of a zoomed-out trace)."""

from __future__ import annotations

import weakref
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.model import KINDS

KIND_COLORS = {
    "kernel": (66, 133, 244),
    "memcpy_h2d": (52, 168, 83),
    "memcpy_d2h": (171, 71, 188),
    "memcpy_d2d": (251, 140, 0),
    "memcpy_p2p": (141, 110, 99),
    "memcpy": (0, 150, 136),
    "memset": (120, 144, 156),
    "nvtx": (244, 180, 0),
    "cuda_api": (0, 172, 193),
    "cpu_op": (121, 134, 203),
    "ort_node": (239, 108, 0),
    "other": (158, 158, 158),
}
# Kernels wide enough to see are coloured by name (as in Nsight Systems and Perfetto), from hues
# that stay clear of the copy colours (H2D green, D2H purple); aggregated columns keep the kind.
KERNEL_COLORS = (
    (66, 133, 244), (0, 121, 191), (3, 155, 229), (0, 172, 193), (38, 166, 154),
    (255, 167, 38), (245, 124, 0), (230, 81, 0), (229, 57, 53), (194, 24, 91),
    (121, 85, 72), (84, 110, 122), (63, 81, 181), (92, 107, 192), (255, 202, 40),
    (141, 110, 99),
)  # fmt: skip
PALETTE = np.array([KIND_COLORS[k] for k in KINDS] + [list(c) for c in KERNEL_COLORS], np.float32)
NAME_CODE = len(KINDS)  # kernel-name colours start here
EDGE = len(PALETTE)  # a darkened variant is this far on
BACKGROUND = (250, 250, 250)
WIDE_PX = 1.5


@dataclass
class Label:
    x0: float
    x1: float
    y: int
    event: int


def _lookup() -> np.ndarray:
    """Every pixel the painter can produce, as 0xFFRRGGBB (Qt's Format_RGB32): ``[code, level]``
    is kind ``code`` (``code - len(KINDS)``: its darkened edge) over the background at opacity
    ``level / 255``. A row is then one table lookup, with no per-pixel float blending."""
    colors = np.concatenate([PALETTE, PALETTE * 0.6])[:, None, :]
    opacity = (np.arange(256, dtype=np.float32) / 255)[None, :, None]
    rgb = np.clip(colors * opacity + np.array(BACKGROUND, np.float32) * (1 - opacity), 0, 255)
    c = rgb.astype(np.uint32)
    return np.uint32(0xFF000000) | (c[..., 0] << 16) | (c[..., 1] << 8) | c[..., 2]


PIXELS = _lookup()
BACKGROUND_PIXEL = int(PIXELS[0, 0])


def kernel_codes(index: TimelineIndex) -> np.ndarray:
    """Per name id: the palette code of a kernel with that name (a stable hash of the name, so
    one kernel has one colour in every trace and every run)."""
    cached = _KERNEL_CODES.get(index)
    names = index.trace.names
    if cached is None or cached.size != len(names):
        hashes = np.array([zlib.crc32(n.encode("utf-8", "replace")) for n in names], np.int64)
        cached = NAME_CODE + hashes % len(KERNEL_COLORS)
        _KERNEL_CODES[index] = cached
    return cached


# per timeline index, computed once (the index is core's: the view keeps its own cache beside it)
_KERNEL_CODES: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


def _density(busy_by_kind: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Columns of aggregated events → (kind code, opacity level): the kind with the most time,
    opacity by the column's busy fraction (0.35 for a trace of activity, 1.0 when fully busy)."""
    busy = busy_by_kind.sum(axis=0)
    code = kinds[busy_by_kind.argmax(axis=0)]
    level = np.where(busy > 0, np.minimum(89.25 + 165.75 * busy, 255.0), 0.0).astype(np.uint8)
    return code, level


def paint(
    index: TimelineIndex,
    t0: int,
    t1: int,
    width: int,
    rows: list[tuple[int, int]],
    height: int,
    row_height: int,
    label_px: float = 60.0,
) -> tuple[np.ndarray, list[Label]]:
    """``rows`` = [(row, y)] to draw; returns an (height, width) uint32 image of 0xFFRRGGBB
    pixels (Qt's Format_RGB32) and the spans wide enough for a label.

    A row whose window holds more events than pixels is painted from its coverage grid when
    one pixel spans ≥ 8 grid bins (O(width), exact to ~1/8 pixel); otherwise from its events."""
    image = np.full((height, width), BACKGROUND_PIXEL, np.uint32)
    labels: list[Label] = []
    if t1 <= t0 or width <= 0:
        return image, labels
    scale = width / (t1 - t0)
    pixel_ns = (t1 - t0) / width
    trace = index.trace
    nk = len(KINDS)
    by_name = kernel_codes(index)
    kernel = KINDS.index("kernel")
    for row, y in rows:
        top, bottom = max(y + 1, 0), min(y + row_height - 1, height)
        if bottom <= top:
            continue
        coverage = index.coverage.get(row)
        if (
            coverage is not None
            and pixel_ns >= 8 * coverage.step
            and index.visible_count(row, t0, t1) > width // 2
        ):
            code, level = _density(coverage.busy(t0, t1, width), coverage.kinds)
        else:
            found = index.visible(row, t0, t1)
            if not found.size:
                continue
            x0 = (trace.start[found] - t0) * scale
            x1 = x0 + trace.dur[found] * scale
            kinds = trace.kind[found].astype(np.int64)
            wide = (x1 - x0) >= WIDE_PX
            if wide.all():
                code, level = np.zeros(width, np.int64), np.zeros(width, np.uint8)
            else:
                narrow = ~wide
                span = np.maximum(x1[narrow] - x0[narrow], 0.05)
                column = np.clip(((x0[narrow] + x1[narrow]) / 2).astype(np.int64), 0, width - 1)
                # busy time per (column, kind) over the kinds present only (1–4 in a row, not
                # all 12): the per-row cost is O(width × kinds present) + O(events)
                present = np.flatnonzero(np.bincount(kinds[narrow], minlength=nk))
                slot = np.zeros(nk, np.int64)
                slot[present] = np.arange(present.size)
                by_kind = np.bincount(
                    column * present.size + slot[kinds[narrow]],
                    weights=span,
                    minlength=width * present.size,
                ).reshape(width, present.size)
                code, level = _density(by_kind.T, present)
            if wide.any():
                w0, w1, events = x0[wide], x1[wide], found[wide]
                a = np.clip(np.floor(w0), 0, width).astype(np.int64)
                b = np.clip(np.ceil(w1), 0, width).astype(np.int64)
                lengths = np.maximum(b - a, 0)
                columns = np.repeat(a - np.cumsum(lengths) + lengths, lengths) + np.arange(
                    int(lengths.sum())
                )
                wide_codes = np.where(
                    kinds[wide] == kernel, by_name[trace.name[events]], kinds[wide]
                )
                code[columns] = np.repeat(wide_codes, lengths)
                level[columns] = 255
                edge = b[lengths >= 4] - 1
                code[edge] += EDGE  # a darkened last column keeps neighbours apart
                labels += [
                    Label(float(max(w0[i], 0)), float(min(w1[i], width)), y, int(events[i]))
                    for i in np.flatnonzero((w1 - w0) >= label_px)[:500]
                ]
        image[top:bottom] = PIXELS[code, level]
    return image, labels
