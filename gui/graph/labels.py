"""Text on the graph canvas: each box's label (fitted to its box: op type, weights, name, shape
as room allows) and the tensor shapes painted beside the edges (split from ``canvas.py``,
which paints the boxes, edges and marks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QFontMetricsF, QPainter, QTransform

from deploylens.core.graph.details import weights_text
from deploylens.core.graph.ir import OP, GraphIR
from deploylens.core.graph.scene import BOX_FRAME, BOX_NODE, GROUP_HEADER, GraphScene, Scene
from deploylens.core.model.summary_text import shape_text
from deploylens.gui.graph import palette

LABEL_SLACK_PX = 10.0  # a label may overhang its box by this much rather than vanish
MIN_FONT_PT, MAX_FONT_PT = 7.0, 9.0  # labels never shrink below readable
SHAPES_FROM_SCALE = 0.55  # tensor shapes on edges from this zoom in (Netron shows them)
SHAPES_MAX_EDGES = 1500  # … while this few edges are in view
LABEL_MIN_PX = 12.0  # boxes narrower than this on screen get no text
DETAIL_MIN_PX = 46.0  # boxes taller than this get name and shape lines
MAX_LABELLED = 4000  # more boxes on screen than this: too dense for text
STRIP_HEIGHT = 6.0  # a collapsed group's op-type composition strip (scene units)


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
    avoid: Placed | None = None,
) -> int:
    """Tensor shapes beside the edges, near their heads (from the model's value info and the
    worker's shape inference), each where no other shape is (``placed``) and on no label
    written beside a box (``avoid``)."""
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
            if placed.free(rect) and (avoid is None or avoid.free(rect)):
                break
        else:
            continue  # no room beside this edge: the Properties view gives the shape
        placed.take(rect)
        painter.drawText(QPointF(rect.left(), rect.top() + ascent), text)
        drawn += 1
    return drawn


@dataclass
class BoxLabels:
    """What the box labels are painted from (the canvas's scene, model, fills and strips)."""

    scene: Scene
    model: GraphScene
    fills: np.ndarray
    strips: dict[int, list[tuple[float, tuple[int, int, int]]]]
    font_small: QFont


@dataclass(frozen=True)
class Label:
    """One label as painted: its box, its text and where on screen (tests read these)."""

    box: int
    text: str
    rect: QRectF
    beside: bool = False  # drawn next to its box, which is narrower than the text


class Obstacles:
    """The screen rectangles a label drawn beside its box must miss: the boxes on screen and
    the frames' header bands (a frame's body holds the others) as one array tested at NumPy
    speed, and the labels placed so far. Built per paint on the UI thread: a QRectF per box
    into the grid cost 90 ms at 3,600 boxes; the array costs well under a millisecond."""

    def __init__(self, scene: Scene, boxes: np.ndarray, transform: QTransform) -> None:
        r = scene.box_rect[boxes].astype(np.float64, copy=True)
        frames = scene.box_kind[boxes] == BOX_FRAME
        r[frames, 3] = r[frames, 1] + GROUP_HEADER
        t = transform  # the canvas's is a scale and a shift: corners stay corners
        xs = t.m11() * r[:, [0, 2]] + t.m21() * r[:, [1, 3]] + t.dx()
        ys = t.m12() * r[:, [0, 2]] + t.m22() * r[:, [1, 3]] + t.dy()
        self.rects = np.stack(
            [xs.min(axis=1), ys.min(axis=1), xs.max(axis=1), ys.max(axis=1)], axis=1
        )
        self.labels = Placed()

    def free(self, rect: QRectF) -> bool:
        r = self.rects
        hit = (
            (r[:, 0] < rect.right()) & (r[:, 2] > rect.left())
            & (r[:, 1] < rect.bottom()) & (r[:, 3] > rect.top())
        )  # fmt: skip
        return not hit.any() and self.labels.free(rect)

    def take(self, rect: QRectF) -> None:
        self.labels.take(rect)


def beside_rect(box_rect: QRectF, width: float, height: float, placed: Obstacles) -> QRectF | None:
    """Where a label too wide for its box goes: right of the box, else left, on nothing."""
    top = box_rect.center().y() - height / 2
    for left in (box_rect.right() + 3, box_rect.left() - 3 - width):
        rect = QRectF(left, top, width, height)
        if placed.free(rect):
            return rect
    return None


def paint_box_labels(
    painter: QPainter,
    on: BoxLabels,
    boxes: np.ndarray,
    transform: QTransform,
    scale: float,
) -> list[Label]:
    """The text in each box on screen large enough to hold some: op type, weights, name
    and output shape as height allows; a group's name and node count. An op type wider than
    its box (MatMul, Softmax at a block's zoom) is written whole beside the box where that
    space is free (on no box on screen, no label so far), as Netron's
    text-sized boxes would show it, rather than elided to nothing."""
    scene, model = on.scene, on.model
    on_screen = boxes
    rects = scene.box_rect[boxes]
    screen_w = (rects[:, 2] - rects[:, 0]) * scale
    screen_h = (rects[:, 3] - rects[:, 1]) * scale
    boxes = boxes[(screen_w >= LABEL_MIN_PX) & (screen_h >= 7)]
    if not boxes.size or boxes.size > MAX_LABELLED:
        return []
    placed = Obstacles(scene, on_screen, transform)  # boxes, then the labels beside them
    ir = model.ir
    font = QFont(on.font_small)
    font.setPointSizeF(float(np.clip(12.0 * scale, MIN_FONT_PT, MAX_FONT_PT)))
    painter.setFont(font)
    metrics = QFontMetrics(font)
    painter.setPen(QColor(palette.TEXT))
    drawn: list[Label] = []
    for box in boxes.tolist():
        x0, y0, x1, y1 = scene.box_rect[box].tolist()
        top_left = transform.map(QPointF(x0, y0))
        bottom_right = transform.map(QPointF(x1, y1))
        rect = QRectF(top_left, bottom_right).adjusted(2, 1, -2, -1)
        kind, ref = int(scene.box_kind[box]), int(scene.box_ref[box])
        if kind == BOX_NODE:
            lines = node_lines(ir, ref, rect.height(), metrics.lineSpacing())
            flags = Qt.AlignmentFlag.AlignCenter
        else:
            badge = 16 * scale  # the +/− badge sits at the left
            rect.adjust(badge, 0, 0, 0)
            name = ir.groups.name[ref] or ir.title
            count = int(model.group_size[ref])
            if kind == BOX_FRAME:
                if GROUP_HEADER * scale < 0.9 * metrics.height():
                    continue  # the header band is thinner than a line: no label
                rect.setHeight(GROUP_HEADER * scale)
                whole = f"{name}  ·  {count:,} nodes"
                fits = metrics.horizontalAdvance(whole) <= rect.width()
                lines = [whole if fits else name]  # the count goes before the name elides
            else:
                rect.adjust(0, 0, 0, -STRIP_HEIGHT * scale if box in on.strips else 0)
                two = rect.height() >= 2.2 * metrics.height()
                lines = [name, f"{count:,} nodes"] if two else [name]
            flags = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter
        if kind == BOX_NODE:
            r, g, b = on.fills[box].tolist()
        elif kind == BOX_FRAME:
            r, g, b = palette.FRAME_HEADER
        else:
            r, g, b = on.fills[box].tolist()
        dark = 0.299 * r + 0.587 * g + 0.114 * b < 120
        first = lines[0]
        width = metrics.horizontalAdvance(first)
        if kind == BOX_NODE and width > rect.width() + LABEL_SLACK_PX:
            beside = beside_rect(rect, width, metrics.height(), placed)
            if beside is not None:  # whole, next to the box, in the canvas's text colour
                placed.take(beside)
                backdrop = QColor(palette.BACKGROUND)
                backdrop.setAlpha(215)  # edges and frame lines under it stay faintly visible
                painter.fillRect(beside.adjusted(-1, 0, 1, 0), backdrop)
                painter.setPen(QColor(palette.TEXT))
                painter.drawText(beside, int(Qt.AlignmentFlag.AlignCenter), first)
                drawn.append(Label(box, first, beside, beside=True))
                continue
        painter.setPen(QColor("white" if dark else palette.TEXT))
        text = fit_lines(lines, metrics, rect.width())
        if not text:
            continue
        room = rect.adjusted(-LABEL_SLACK_PX / 2, 0, LABEL_SLACK_PX / 2, 0)
        painter.drawText(room, int(flags), text)
        drawn.append(Label(box, text, room))
    return drawn


def node_lines(ir: GraphIR, node: int, height_px: float, line_px: float = 14.0) -> list[str]:
    """A node box's lines: the op type; Netron's W⟨…⟩ B⟨…⟩ once two lines fit (a node that
    takes weights is laid out a line taller for it); with more height its name and the
    output's type and shape."""
    first = ir.op_type(node) if ir.kind[node] == OP else ir.label(node)
    weights = weights_text(ir, node) if ir.kind[node] == OP else ""
    if height_px < DETAIL_MIN_PX:
        return [first, weights] if weights and height_px >= 1.9 * line_px else [first]
    lines = [first, ir.label(node)] if ir.kind[node] == OP else [first]
    if weights:  # Netron's W⟨64×64×1×1⟩ B⟨64⟩, right under the op type
        lines.insert(1, weights)
    proto = ir.node_proto(node)
    output = proto.output[0] if proto is not None and proto.output else ir.label(node)
    typed = ir.value_types.get(output)
    if typed and height_px >= DETAIL_MIN_PX * 1.4:
        lines.append(f"{typed[0]} {shape_text(typed[1])}")
    return lines
