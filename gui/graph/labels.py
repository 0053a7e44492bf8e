"""Text on the graph canvas that is not a box's own drawing: how a label is fitted to its box,
and the tensor shapes painted beside the edges (split from ``canvas.py``, which paints the rest)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QFontMetricsF, QPainter, QTransform

from deploylens.core.graph.scene import GraphScene, Scene
from deploylens.core.model.summary_text import shape_text
from deploylens.gui.graph import palette

LABEL_SLACK_PX = 10.0  # a label may overhang its box by this much rather than vanish
MIN_FONT_PT, MAX_FONT_PT = 7.0, 9.0  # labels never shrink below readable
SHAPES_FROM_SCALE = 0.55  # tensor shapes on edges from this zoom in (Netron shows them)
SHAPES_MAX_EDGES = 1500  # … while this few edges are in view


def fit_lines(lines: list[str], metrics: QFontMetrics, width: float) -> str:
    """Each line whole if it fits (with a little overhang), else elided in the middle while
    that keeps three characters; lines that cannot are dropped (the first one: no label)."""
    kept = []
    for index, line in enumerate(lines):
        if metrics.horizontalAdvance(line) <= width + LABEL_SLACK_PX:
            kept.append(line)
            continue
        elided = metrics.elidedText(line, Qt.TextElideMode.ElideMiddle, int(width + 4))
        if len(elided.replace("…", "")) >= 3:
            kept.append(elided)
        elif index == 0:
            return ""
    return "\n".join(kept)


class Placed:
    """Screen rectangles already taken by a label, bucketed on a grid: a label that would land
    on one is moved along its edge, or left out — never printed over another (a node's outputs
    all start at its bottom centre, and their shapes were drawn on top of each other)."""

    CELL = 64.0

    def __init__(self) -> None:
        self.rects: list[QRectF] = []
        self.grid: dict[tuple[int, int], list[int]] = {}

    def _cells(self, rect: QRectF) -> list[tuple[int, int]]:
        c = self.CELL
        xs = range(int(rect.left() // c), int(rect.right() // c) + 1)
        ys = range(int(rect.top() // c), int(rect.bottom() // c) + 1)
        return [(x, y) for x in xs for y in ys]

    def free(self, rect: QRectF) -> bool:
        return not any(
            self.rects[i].intersects(rect) for cell in self._cells(rect)
            for i in self.grid.get(cell, ())
        )  # fmt: skip

    def take(self, rect: QRectF) -> None:
        for cell in self._cells(rect):
            self.grid.setdefault(cell, []).append(len(self.rects))
        self.rects.append(rect)


def paint_edge_shapes(
    painter: QPainter,
    scene: Scene | None,
    model: GraphScene | None,
    font_small: QFont,
    view: QRectF,
    transform: QTransform,
    scale: float,
    placed: Placed | None = None,
) -> int:
    """Tensor shapes beside the edges, near their heads (from the model's value info and the
    worker's shape inference), each where no other shape is."""
    assert scene is not None and model is not None
    placed = placed if placed is not None else Placed()
    if not len(scene.edge_tensor) or scale < SHAPES_FROM_SCALE:
        return 0
    e = scene.edge_rect
    shown = np.flatnonzero(
        (e[:, 2] >= view.left()) & (e[:, 0] <= view.right())
        & (e[:, 3] >= view.top()) & (e[:, 1] <= view.bottom())
    )  # fmt: skip
    if not shown.size or shown.size > SHAPES_MAX_EDGES:
        return 0
    font = QFont(font_small)
    font.setPointSizeF(MIN_FONT_PT)
    painter.setFont(font)
    metrics = QFontMetricsF(font)
    painter.setPen(QColor(palette.EDGE_TEXT))
    ir = model.ir
    offsets, points = scene.edge_offsets, scene.edge_points
    drawn = 0
    seen: set[tuple[int, int]] = set()
    for edge in shown.tolist():
        key = (int(scene.edge_src_box[edge]), int(scene.edge_tensor[edge]))
        if key in seen:  # one tensor to many consumers: said once, at its source
            continue
        seen.add(key)
        typed = ir.value_types.get(ir.strings[int(scene.edge_tensor[edge])])
        if not typed or typed[1] is None:
            continue
        run = points[offsets[edge] : offsets[edge + 1]]
        (x1, y1), (x2, y2) = run[0], run[1] if len(run) > 1 else run[0]
        length = float(np.hypot(x2 - x1, y2 - y1)) or 1.0
        text = shape_text(typed[1]).strip("[]").replace(", ", "×")
        width, height, ascent = metrics.horizontalAdvance(text), metrics.height(), metrics.ascent()
        for along in (18.0, 36.0, 54.0):  # px from the source, further down its first segment
            step = min(along / max(scale, 1e-6), length * 0.8)
            at = transform.map(
                QPointF(x1 + (x2 - x1) * step / length, y1 + (y2 - y1) * step / length)
            )
            rect = QRectF(at.x() + 5, at.y() + 4 - ascent, width, height)
            if placed.free(rect):
                break
        else:
            continue  # no room beside this edge: the Properties view gives the shape
        placed.take(rect)
        painter.drawText(QPointF(rect.left(), rect.top() + ascent), text)
        drawn += 1
    return drawn
