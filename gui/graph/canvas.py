"""The graph canvas: one widget paints every box and edge from NumPy arrays, culled to the view,
with level of detail — never one QGraphicsItem per node."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
    QResizeEvent,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import QWidget

from deploylens.core.graph.overlay import Overlay
from deploylens.core.graph.scene import (
    BOX_FRAME,
    BOX_GROUP,
    BOX_NODE,
    GROUP_HEADER,
    NODE_HEIGHT,
    GraphScene,
    Scene,
)
from deploylens.gui.graph import palette, raster
from deploylens.gui.graph.labels import (
    SHAPES_FROM_SCALE,
    STRIP_HEIGHT,
    BoxLabels,
    Label,
    Placed,
    node_lines,
    paint_box_labels,
    paint_edge_shapes,
)

MIN_SCALE, MAX_SCALE = 0.002, 8.0
STRAIGHT_EDGES_BELOW = 0.35  # scale under which edges are drawn as straight segments


class GraphCanvas(QWidget):
    sig_selected = Signal(int, int)  # box kind (BOX_*), ref (node index or group id); -1 clears
    sig_activated = Signal(int, int)  # double click on a box
    sig_context = Signal(int, int, QPointF)  # right click: kind, ref, global position
    sig_view_changed = Signal()
    sig_fills_changed = Signal()  # the overlay's colours (and so the legend's scale) changed
    sig_highlight_changed = Signal()  # the highlighted node set changed (rubber band, menus)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(False)
        self.setMinimumSize(200, 150)
        self.model: GraphScene | None = None
        self.scene: Scene | None = None
        self.overlay: Overlay | None = None
        self.fills = np.zeros((0, 3), dtype=np.uint8)
        self.value_scale: tuple[float, float] | None = None  # numeric overlays: fills and legend
        self.strips: dict[int, list[tuple[float, tuple[int, int, int]]]] = {}
        self.scale = 1.0
        self.center = QPointF(0, 0)
        # The view is the fitted one until the user zooms or pans: a resize (the window reaching
        # its size after launch, a maximize) fits again, so the graph never opens at a fraction.
        self.fitted = False
        self.selected: tuple[int, int] | None = None
        self.highlight = np.zeros(0, dtype=bool)  # per node
        self._press: QPointF | None = None
        self._dragged = False
        self._band: tuple[QPointF, QPointF] | None = None  # Shift+drag: widget corners
        self.font_small = QFont(self.font())
        self.font_small.setPointSizeF(8.5)
        self.last_paint_stats: dict[str, int] = {}
        self.shape_labels = Placed()  # where the last paint put the tensor shapes
        self.box_labels: list[Label] = []  # the last paint's box labels, as painted
        self.painted_once: list[Callable[[], object]] = []  # run once, after the next paint

    # -- content ----------------------------------------------------------------------------
    def set_model(self, model: GraphScene, fit: bool = True) -> None:
        self.model = model
        self.overlay = None  # overlays belong to one graph; the caller sets the new one
        self.highlight = np.zeros(model.ir.node_count, dtype=bool)
        self.selected = None
        self.refresh_scene()
        if fit:
            self.fit()

    def refresh_scene(self) -> None:
        """Pick up the model's current scene (after expand/collapse) and recolour."""
        if self.model is None:
            return
        self.scene = self.model.scene()
        self._recolour()
        self.update()
        self.sig_view_changed.emit()

    def set_overlay(self, overlay: Overlay | None) -> None:
        self.overlay = overlay
        if self.model is not None and self.scene is not None:
            self._recolour()
        self.update()

    def _recolour(self) -> None:
        """Fills, strips and the one value scale they share with the legend."""
        assert self.model is not None and self.scene is not None
        self.value_scale = palette.overlay_scale(self.model, self.scene, self.overlay)
        self.fills = palette.box_fills(self.model, self.scene, self.overlay, self.value_scale)
        self.strips = palette.composition(self.model, self.scene, self.overlay)
        self.sig_fills_changed.emit()

    def set_highlight(self, nodes: np.ndarray | None) -> None:
        if self.model is None:
            return
        self.highlight = np.zeros(self.model.ir.node_count, dtype=bool)
        if nodes is not None:
            self.highlight[nodes] = True
        self.update()
        self.sig_highlight_changed.emit()

    def highlighted_nodes(self) -> np.ndarray:
        return np.flatnonzero(self.highlight)

    def select_in_rect(self, a: QPointF, b: QPointF) -> np.ndarray:
        """Highlight the op nodes whose boxes the widget rectangle a–b touches (rubber band);
        a collapsed group inside counts as all its nodes. Returns the node indices."""
        if self.scene is None or self.model is None:
            return np.zeros(0, dtype=np.int64)
        p, q = self.to_scene(a), self.to_scene(b)
        x0, x1 = sorted((p.x(), q.x()))
        y0, y1 = sorted((p.y(), q.y()))
        r = self.scene.box_rect
        touched = (r[:, 2] >= x0) & (r[:, 0] <= x1) & (r[:, 3] >= y0) & (r[:, 1] <= y1)
        boxes = np.flatnonzero(touched & (self.scene.box_kind != BOX_FRAME))
        node_box = self.scene.node_box
        nodes = np.flatnonzero(np.isin(node_box, boxes))
        self.set_highlight(nodes)
        return nodes

    # -- view transform -------------------------------------------------------------------------
    def transform(self) -> QTransform:
        s = self.scale
        return QTransform(
            s,
            0,
            0,
            s,
            self.width() / 2 - self.center.x() * s,
            self.height() / 2 - self.center.y() * s,
        )

    def to_scene(self, point: QPointF) -> QPointF:
        return QPointF(
            (point.x() - self.width() / 2) / self.scale + self.center.x(),
            (point.y() - self.height() / 2) / self.scale + self.center.y(),
        )

    def visible_rect(self) -> QRectF:
        top_left = self.to_scene(QPointF(0, 0))
        return QRectF(
            top_left.x(), top_left.y(), self.width() / self.scale, self.height() / self.scale
        )

    def fit(self) -> None:
        if self.scene is None:
            return
        margin = 40.0
        w = max(self.scene.width, 1.0) + margin
        h = max(self.scene.height, 1.0) + margin
        self.scale = float(np.clip(min(self.width() / w, self.height() / h), MIN_SCALE, 1.5))
        self.center = QPointF(self.scene.width / 2, self.scene.height / 2)
        self.fitted = True
        self.update()
        self.sig_view_changed.emit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.fitted:
            self.fit()

    def zoom(self, factor: float, anchor: QPointF | None = None) -> None:
        self.fitted = False
        anchor = anchor if anchor is not None else QPointF(self.width() / 2, self.height() / 2)
        before = self.to_scene(anchor)
        self.scale = float(np.clip(self.scale * factor, MIN_SCALE, MAX_SCALE))
        after = self.to_scene(anchor)
        self.center = QPointF(
            self.center.x() + before.x() - after.x(), self.center.y() + before.y() - after.y()
        )
        self.update()
        self.sig_view_changed.emit()

    def pan_pixels(self, dx: float, dy: float) -> None:
        self.fitted = False
        self.center = QPointF(self.center.x() - dx / self.scale, self.center.y() - dy / self.scale)
        self.update()
        self.sig_view_changed.emit()

    def center_on_box(self, box: int, zoom_to: float | None = None) -> None:
        if self.scene is None or box < 0:
            return
        x0, y0, x1, y1 = self.scene.box_rect[box]
        self.fitted = False
        self.center = QPointF((x0 + x1) / 2, (y0 + y1) / 2)
        if zoom_to is not None:
            self.scale = zoom_to
        self.update()
        self.sig_view_changed.emit()

    # -- hit testing ------------------------------------------------------------------------------
    def box_at(self, point: QPointF) -> int:
        """Innermost box under a widget position, or -1."""
        if self.scene is None or not len(self.scene.box_kind):
            return -1
        p = self.to_scene(point)
        r = self.scene.box_rect
        inside = (r[:, 0] <= p.x()) & (p.x() <= r[:, 2]) & (r[:, 1] <= p.y()) & (p.y() <= r[:, 3])
        hits = np.flatnonzero(inside)
        if not hits.size:
            return -1
        solid = hits[self.scene.box_kind[hits] != BOX_FRAME]
        if solid.size:
            return int(solid[-1])
        return int(hits[np.argmax(self.scene.box_depth[hits])])

    def box_of(self, kind: int, ref: int) -> int:
        if self.scene is None:
            return -1
        if kind == BOX_NODE:
            return int(self.scene.node_box[ref]) if 0 <= ref < len(self.scene.node_box) else -1
        return self.scene.group_box.get(ref, -1)

    # -- painting ---------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            self.paint_scene(painter, self.visible_rect(), self.transform(), self.scale)
            if self._band is not None:
                painter.setPen(QPen(QColor(palette.SELECTED), 1, Qt.PenStyle.DashLine))
                painter.setBrush(QColor(224, 0, 224, 30))
                painter.drawRect(QRectF(*self._band).normalized())
        finally:
            painter.end()
        waiting, self.painted_once = self.painted_once, []
        for run in waiting:  # from the event loop, once this paint is on the screen
            QTimer.singleShot(0, run)

    def paint_scene(
        self,
        painter: QPainter,
        view: QRectF,
        transform: QTransform,
        scale: float,
        background: bool = True,
    ) -> None:
        """Paint what intersects ``view`` (scene coordinates); also used for PNG/SVG export."""
        if background:
            painter.fillRect(painter.viewport(), QColor(palette.BACKGROUND))
        scene = self.scene
        if scene is None or self.model is None or not len(scene.box_kind):
            return
        r = scene.box_rect
        visible = (
            (r[:, 2] >= view.left())
            & (r[:, 0] <= view.right())
            & (r[:, 3] >= view.top())
            & (r[:, 1] <= view.bottom())
        )
        device = painter.device()
        if NODE_HEIGHT * scale < raster.RASTER_BELOW_PX and isinstance(device, QImage | QWidget):
            drawn = raster.paint_raster(painter, scene, self.fills, visible, transform)
            painter.setTransform(transform)
            self._paint_marks(painter, scale)
            painter.resetTransform()
            self.last_paint_stats = {
                "boxes": int(visible.sum()),
                "edges": 0,
                "labels": 0,
                "raster": drawn,
            }
            return
        near = scale >= 0.6
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, scale >= 0.25)
        painter.setTransform(transform)
        frames = np.flatnonzero(visible & (scene.box_kind == BOX_FRAME))
        frames = frames[np.argsort(scene.box_depth[frames], kind="stable")]
        self._paint_frames(painter, frames, scale)
        edges = self._paint_edges(painter, view, scale)
        nodes = np.flatnonzero(visible & (scene.box_kind == BOX_NODE))
        groups = np.flatnonzero(visible & (scene.box_kind == BOX_GROUP))
        self._paint_boxes(painter, nodes, scale)
        self._paint_groups(painter, groups, scale)
        self._paint_marks(painter, scale)
        painter.resetTransform()
        self.shape_labels = Placed()  # where this paint put the tensor shapes (tests read it)
        self.box_labels = self._paint_labels(painter, np.flatnonzero(visible), transform, scale)
        labelled = len(self.box_labels)
        shapes = 0
        if near or scale >= SHAPES_FROM_SCALE:
            beside = Placed()  # a shape may sit on a box's edge, never on a label beside it
            for label in self.box_labels:
                if label.beside:
                    beside.take(label.rect)
            shapes = paint_edge_shapes(
                painter, self.scene, self.model, self.font_small, view, transform, scale,
                self.shape_labels, avoid=beside,
            )  # fmt: skip
        self.last_paint_stats = {
            "boxes": int(visible.sum()), "edges": edges, "labels": labelled, "shapes": shapes,
        }  # fmt: skip

    def _paint_frames(self, painter: QPainter, frames: np.ndarray, scale: float) -> None:
        """Expanded groups: a frame with a header band and a − badge (not a big op box)."""
        if not frames.size:
            return
        painter.setPen(QPen(QColor(palette.FRAME_BORDER), 0 if scale < 0.5 else 1.2 / scale))
        painter.setBrush(QBrush(QColor(*palette.FRAME_FILL)))
        radius = 6.0
        header = QColor(*palette.FRAME_HEADER)
        for box in frames.tolist():
            x, y, w, h = self._xywh(box)
            painter.setPen(QPen(QColor(palette.FRAME_BORDER), 0 if scale < 0.5 else 1.2 / scale))
            painter.setBrush(QBrush(QColor(*palette.FRAME_FILL)))
            painter.drawRoundedRect(QRectF(x, y, w, h), radius, radius)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(header)
            painter.drawRect(QRectF(x + 1, y + 1, w - 2, GROUP_HEADER - 2))
            if scale >= 0.3:
                self._badge(painter, *self._badge_xy(box), "−")

    def _badge(self, painter: QPainter, x: float, y: float, sign: str) -> None:
        """The expand (+) / collapse (−) mark of a group, in scene units."""
        size = 12.0
        painter.setPen(QPen(QColor(palette.GROUP_BORDER), 1.0))
        painter.setBrush(QColor("white"))
        painter.drawRect(QRectF(x, y, size, size))
        painter.drawLine(QLineF(x + 3, y + size / 2, x + size - 3, y + size / 2))
        if sign == "+":
            painter.drawLine(QLineF(x + size / 2, y + 3, x + size / 2, y + size - 3))

    def _paint_groups(self, painter: QPainter, groups: np.ndarray, scale: float) -> None:
        """Collapsed groups: a card stack (a shadow card behind), a + badge, and under a
        categorical overlay the strip of what they hold."""
        if not groups.size:
            return
        shadow = QColor(palette.GROUP_SHADOW)
        border = QPen(QColor(palette.GROUP_BORDER), 0 if scale < 0.5 else 1.4 / scale)
        for box in groups.tolist():
            x, y, w, h = self._xywh(box)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(shadow)
            painter.drawRoundedRect(QRectF(x + 4, y + 4, w, h), 5, 5)
            r, g, b = self.fills[box].tolist()
            painter.setPen(border)
            painter.setBrush(QColor(r, g, b))
            painter.drawRoundedRect(QRectF(x, y, w, h), 5, 5)
            parts = self.strips.get(box)
            if parts:
                painter.setPen(Qt.PenStyle.NoPen)
                left = x + 2
                for fraction, rgb in parts:
                    width = (w - 4) * fraction
                    painter.setBrush(QColor(*rgb))
                    painter.drawRect(QRectF(left, y + h - STRIP_HEIGHT - 2, width, STRIP_HEIGHT))
                    left += width
            if scale >= 0.3:
                self._badge(painter, *self._badge_xy(box), "+")

    def _badge_xy(self, box: int) -> tuple[float, float]:
        """Where a group's +/− badge is drawn (scene units): one place for paint and click."""
        x, y, _, h = self._xywh(box)
        if self.scene.box_kind[box] == BOX_FRAME:
            return x + 5, y + 5
        return x + 5, y + (h - 12) / 2 - (3 if self.strips.get(box) else 0)

    def badge_at(self, point: QPointF) -> int:
        """The group whose +/− badge is under a widget position (a little slack round it: the
        badge is 12 units square), or -1."""
        box = self.box_at(point)
        if box < 0 or self.scene.box_kind[box] not in (BOX_GROUP, BOX_FRAME) or self.scale < 0.3:
            return -1
        bx, by = self._badge_xy(box)
        p = self.to_scene(point)
        slack = 3.0
        inside = bx - slack <= p.x() <= bx + 12 + slack and by - slack <= p.y() <= by + 12 + slack
        return box if inside else -1

    def _xywh(self, box: int) -> tuple[float, float, float, float]:
        x0, y0, x1, y1 = self.scene.box_rect[box]
        return float(x0), float(y0), float(x1 - x0), float(y1 - y0)

    def _paint_edges(self, painter: QPainter, view: QRectF, scale: float) -> int:
        scene = self.scene
        assert scene is not None
        if not len(scene.edge_src_box):
            return 0
        e = scene.edge_rect
        shown = np.flatnonzero(
            (e[:, 2] >= view.left())
            & (e[:, 0] <= view.right())
            & (e[:, 3] >= view.top())
            & (e[:, 1] <= view.bottom())
        )
        painter.setPen(QPen(QColor(palette.EDGE), 0 if scale < 1 else 1.2 / scale))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        offsets, points = scene.edge_offsets, scene.edge_points
        if scale < STRAIGHT_EDGES_BELOW:
            first = points[offsets[shown]]
            last = points[offsets[shown + 1] - 1]
            painter.drawLines(
                [
                    QLineF(a[0], a[1], b[0], b[1])
                    for a, b in zip(first.tolist(), last.tolist(), strict=True)
                ]
            )
        else:
            for edge in shown.tolist():
                run = points[offsets[edge] : offsets[edge + 1]]
                painter.drawPolyline(QPolygonF([QPointF(x, y) for x, y in run.tolist()]))
            if scale >= 0.6:  # arrow heads near
                ends = points[offsets[shown + 1] - 1]
                painter.setBrush(QColor(palette.EDGE))
                for x, y in ends.tolist():
                    painter.drawPolygon(
                        QPolygonF([QPointF(x, y), QPointF(x - 3.5, y - 7), QPointF(x + 3.5, y - 7)])
                    )
        return int(shown.size)

    def _paint_boxes(self, painter: QPainter, boxes: np.ndarray, scale: float) -> None:
        """Op and pseudo nodes, batched by fill colour."""
        if not boxes.size:
            return
        fills = self.fills[boxes]
        keys = (
            (fills[:, 0].astype(np.int64) << 16) | (fills[:, 1].astype(np.int64) << 8) | fills[:, 2]
        )
        pen = QPen(QColor("#52606d"), 0) if scale >= 0.15 else Qt.PenStyle.NoPen
        painter.setPen(pen)
        rects = self.scene.box_rect
        for key in np.unique(keys).tolist():
            members = boxes[keys == key]
            painter.setBrush(QColor((key >> 16) & 255, (key >> 8) & 255, key & 255))
            painter.drawRects(
                [QRectF(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in rects[members].tolist()]
            )

    def _paint_marks(self, painter: QPainter, scale: float) -> None:
        scene = self.scene
        assert scene is not None
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if self.highlight.any():
            boxes = np.unique(scene.node_box[self.highlight])
            boxes = boxes[boxes >= 0]
            painter.setPen(QPen(QColor(palette.HIGHLIGHT), max(2.0, 2.5 / scale)))
            painter.drawRects([QRectF(*self._xywh(b)) for b in boxes.tolist()])
        if self.selected is not None:
            box = self.box_of(*self.selected)
            if box >= 0:
                width = max(2.5, 3.0 / scale)
                rect = QRectF(*self._xywh(box))
                grow = width
                painter.setPen(QPen(QColor(palette.SELECTED_HALO), width * 2.2))
                painter.drawRect(rect.adjusted(-grow, -grow, grow, grow))
                painter.setPen(QPen(QColor(palette.SELECTED), width))
                painter.drawRect(rect.adjusted(-grow, -grow, grow, grow))

    def _paint_labels(
        self, painter: QPainter, boxes: np.ndarray, transform: QTransform, scale: float
    ) -> list[Label]:
        assert self.scene is not None and self.model is not None
        return paint_box_labels(
            painter,
            BoxLabels(self.scene, self.model, self.fills, self.strips, self.font_small),
            boxes,
            transform,
            scale,
        )

    def _node_lines(self, node: int, height_px: float) -> list[str]:
        return node_lines(self.model.ir, node, height_px)

    # -- input ------------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom(1.2**steps, event.position())

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position()
            self._dragged = False
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self._band = (event.position(), event.position())
        elif event.button() == Qt.MouseButton.RightButton:
            box = self.box_at(event.position())
            kind, ref = self._box_key(box)
            self.sig_context.emit(kind, ref, event.globalPosition())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is None:
            return
        if self._band is not None:
            self._band = (self._band[0], event.position())
            self._dragged = True
            self.update()
            return
        delta = event.position() - self._press
        if self._dragged or abs(delta.x()) + abs(delta.y()) > 3:
            self._dragged = True
            self.pan_pixels(delta.x(), delta.y())
            self._press = event.position()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._band is not None:
            band, self._band = self._band, None
            if self._dragged:
                self.select_in_rect(*band)
            self.update()
        elif event.button() == Qt.MouseButton.LeftButton and not self._dragged:
            badge = self.badge_at(event.position())
            if badge >= 0:  # the + expands, the − collapses, as the mark says
                self.sig_activated.emit(*self._box_key(badge))
            else:
                self.select_box(self.box_at(event.position()))
        self._press = None

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        box = self.box_at(event.position())
        if box >= 0:
            self.sig_activated.emit(*self._box_key(box))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        step = 60.0
        actions = {
            Qt.Key.Key_Plus: lambda: self.zoom(1.25),
            Qt.Key.Key_Equal: lambda: self.zoom(1.25),
            Qt.Key.Key_Minus: lambda: self.zoom(0.8),
            Qt.Key.Key_F: self.fit,
            Qt.Key.Key_Home: self.fit,
            Qt.Key.Key_Left: lambda: self.pan_pixels(step, 0),
            Qt.Key.Key_Right: lambda: self.pan_pixels(-step, 0),
            Qt.Key.Key_Up: lambda: self.pan_pixels(0, step),
            Qt.Key.Key_Down: lambda: self.pan_pixels(0, -step),
        }
        action = actions.get(Qt.Key(key))
        if action is None:
            super().keyPressEvent(event)
        else:
            action()

    def _box_key(self, box: int) -> tuple[int, int]:
        if box < 0 or self.scene is None:
            return -1, -1
        return int(self.scene.box_kind[box]), int(self.scene.box_ref[box])

    def select_box(self, box: int) -> None:
        kind, ref = self._box_key(box)
        self.selected = None if box < 0 else (BOX_NODE if kind == BOX_NODE else BOX_GROUP, ref)
        self.update()
        self.sig_selected.emit(kind, ref)
