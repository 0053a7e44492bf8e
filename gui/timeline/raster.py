"""Rasterize the visible part of a trace into one RGBA image with NumPy: the timeline paints a
single ``drawImage`` per frame, whatever the event count (DESIGN.md §5: never an item per event).

Per row and per pixel column: events at least ~1.5 px wide are painted as spans (their last
column darkened so neighbours stay distinct); narrower events are aggregated into the column
they fall in — colour of the kind with the most time there, opacity by how busy the column is
(the density view of a zoomed-out trace)."""

from __future__ import annotations

from dataclasses import dataclass

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
PALETTE = np.array([KIND_COLORS[k] for k in KINDS], np.float32)
BACKGROUND = (250, 250, 250)
WIDE_PX = 1.5


@dataclass
class Label:
    x0: float
    x1: float
    y: int
    event: int


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
    """``rows`` = [(row, y)] to draw; returns an (height, width, 4) uint8 image (premultiplied
    BGRA-ordered bytes for Qt's Format_ARGB32_Premultiplied) and the spans wide enough for a
    label."""
    image = np.empty((height, width, 4), np.uint8)
    image[:, :] = (*BACKGROUND[::-1], 255)
    labels: list[Label] = []
    if t1 <= t0 or width <= 0:
        return image, labels
    scale = width / (t1 - t0)
    trace = index.trace
    nk = len(KINDS)
    for row, y in rows:
        top, bottom = max(y + 1, 0), min(y + row_height - 1, height)
        if bottom <= top:
            continue
        found = index.visible(row, t0, t1)
        if not found.size:
            continue
        x0 = (trace.start[found] - t0) * scale
        x1 = x0 + trace.dur[found] * scale
        kinds = trace.kind[found].astype(np.int64)
        wide = (x1 - x0) >= WIDE_PX
        color = np.zeros((width, 3), np.float32)
        alpha = np.zeros(width, np.float32)
        narrow = ~wide
        if narrow.any():
            span = np.clip(x1[narrow] - x0[narrow], 0.05, None)
            column = np.clip(((x0[narrow] + x1[narrow]) / 2).astype(np.int64), 0, width - 1)
            busy = np.bincount(column, weights=span, minlength=width)
            by_kind = np.bincount(
                column * nk + kinds[narrow], weights=span, minlength=width * nk
            ).reshape(width, nk)
            used = busy > 0
            color[used] = PALETTE[by_kind[used].argmax(axis=1)]
            alpha[used] = np.clip(0.35 + 0.65 * busy[used], 0.0, 1.0)
        if wide.any():
            a = np.clip(np.floor(x0[wide]), 0, width).astype(np.int64)
            b = np.clip(np.ceil(x1[wide]), 0, width).astype(np.int64)
            lengths = np.maximum(b - a, 0)
            total = int(lengths.sum())
            offsets = np.repeat(a - np.cumsum(lengths) + lengths, lengths)
            columns = offsets + np.arange(total)
            wide_kind = np.repeat(kinds[wide], lengths)
            color[columns] = PALETTE[wide_kind]
            alpha[columns] = 1.0
            edge = b[lengths >= 4] - 1
            color[edge] *= 0.6
            long = np.flatnonzero((x1[wide] - x0[wide]) >= label_px)
            events = found[wide]
            labels += [
                Label(float(max(x0[wide][i], 0)), float(min(x1[wide][i], width)), y, int(events[i]))
                for i in long[:500]
            ]
        blend = alpha[:, None]
        line = color * blend + np.array(BACKGROUND, np.float32) * (1 - blend)
        image[top:bottom, :, 0] = line[:, 2]
        image[top:bottom, :, 1] = line[:, 1]
        image[top:bottom, :, 2] = line[:, 0]
    return image, labels
