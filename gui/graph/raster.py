"""Far-zoom level of detail: when boxes are a few pixels tall, rasterize boxes and edges with
NumPy into one image (density view) instead of asking Qt for thousands of tiny primitives."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from deploylens.core.graph.scene import BOX_FRAME, Scene
from deploylens.gui.graph import palette

RASTER_BELOW_PX = 3.0  # node height on screen under which the raster path is used


def _argb(rgb: np.ndarray) -> np.ndarray:
    rgb = rgb.astype(np.uint32)
    return 0xFF000000 | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]


def _color(name: str) -> np.uint32:
    return np.uint32(QColor(name).rgba())


def _fill_rects(buf: np.ndarray, rects: np.ndarray, colors: np.ndarray) -> None:
    """Fill integer pixel rects (x0, y0, x1, y1 exclusive), later rects over earlier ones."""
    h, w = buf.shape
    x0 = np.clip(rects[:, 0], 0, w)
    x1 = np.clip(np.maximum(rects[:, 2], rects[:, 0] + 1), 0, w)
    y0 = np.clip(rects[:, 1], 0, h)
    y1 = np.clip(np.maximum(rects[:, 3], rects[:, 1] + 1), 0, h)
    widths, heights = x1 - x0, y1 - y0
    keep = (widths > 0) & (heights > 0)
    big = keep & (widths * heights > 64)
    for i in np.flatnonzero(big):  # few: frames and long boxes
        buf[y0[i] : y1[i], x0[i] : x1[i]] = colors[i]
    small = np.flatnonzero(keep & ~big)
    if not small.size:
        return
    area = widths[small] * heights[small]
    owner = np.repeat(small, area)
    offset = np.arange(area.sum()) - np.repeat(np.cumsum(area) - area, area)
    px = x0[owner] + offset % widths[owner]
    py = y0[owner] + offset // widths[owner]
    buf[py, px] = colors[owner]


def _draw_segments(buf: np.ndarray, a: np.ndarray, b: np.ndarray, color: np.uint32) -> None:
    h, w = buf.shape
    steps = np.maximum(np.abs(b - a).max(axis=1).astype(np.int64), 1)
    owner = np.repeat(np.arange(len(a)), steps + 1)
    t = (np.arange(owner.size) - np.repeat(np.cumsum(steps + 1) - steps - 1, steps + 1)) / steps[
        owner
    ]
    points = a[owner] + (b[owner] - a[owner]) * t[:, None]
    px, py = points[:, 0].astype(np.int64), points[:, 1].astype(np.int64)
    inside = (px >= 0) & (px < w) & (py >= 0) & (py < h)
    buf[py[inside], px[inside]] = color


def paint_raster(
    painter: QPainter, scene: Scene, fills: np.ndarray, visible: np.ndarray, transform: QTransform
) -> int:
    """Paint visible boxes and edges as one image; returns the number of boxes drawn."""
    device = painter.device()
    w, h = device.width(), device.height()
    buf = np.full((h, w), _color(palette.BACKGROUND), dtype=np.uint32)
    s, dx, dy = transform.m11(), transform.dx(), transform.dy()
    screen = scene.box_rect * s + np.array([dx, dy, dx, dy])
    boxes = np.flatnonzero(visible)
    frames = boxes[scene.box_kind[boxes] == BOX_FRAME]
    frames = frames[np.argsort(scene.box_depth[frames], kind="stable")]
    solid = boxes[scene.box_kind[boxes] != BOX_FRAME]
    _fill_rects(
        buf,
        np.floor(screen[frames]).astype(np.int64),
        np.full(len(frames), _color("#e4ebf3"), dtype=np.uint32),
    )
    offsets, points = scene.edge_offsets, scene.edge_points
    if len(scene.edge_src_box):
        first = points[offsets[:-1]] * s + (dx, dy)
        last = points[offsets[1:] - 1] * s + (dx, dy)
        on = (
            (np.maximum(first[:, 0], last[:, 0]) >= 0)
            & (np.minimum(first[:, 0], last[:, 0]) < w)
            & (np.maximum(first[:, 1], last[:, 1]) >= 0)
            & (np.minimum(first[:, 1], last[:, 1]) < h)
        )
        _draw_segments(buf, first[on], last[on], _color(palette.EDGE))
    _fill_rects(buf, np.floor(screen[solid]).astype(np.int64), _argb(fills[solid]))
    image = QImage(buf.data, w, h, w * 4, QImage.Format.Format_RGB32)
    painter.save()
    painter.resetTransform()
    painter.drawImage(0, 0, image)
    painter.restore()
    return int(solid.size)
