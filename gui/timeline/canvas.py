"""The timeline's detail view: lanes with headers, a time axis, events painted as one raster
image per frame (``raster.paint``), labels on wide events, the selected event with a flow arrow
to its correlated API call / GPU work, and a selected time range.

Mouse: wheel zooms at the cursor, Shift+wheel scrolls lanes, drag pans, Shift+drag selects a
time range, click selects an event, hover shows a tooltip. Keys: W/S zoom in/out, A/D pan,
F fits the whole trace (Perfetto's and Nsight Systems' bindings)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFontMetrics,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
    QWheelEvent,
)
from PySide6.QtWidgets import QToolTip, QWidget

from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.model import KIND
from deploylens.gui.timeline.raster import paint

HEADER_W = 200
AXIS_H = 22
ROW_H = 16
LANE_GAP = 4


def nice_step(span_ns: float, pixels: float, min_px: float = 90.0) -> float:
    """A 1-2-5 × 10^k ns tick step that leaves at least ``min_px`` between ticks."""
    raw = span_ns * min_px / max(pixels, 1.0)
    base = 10 ** math.floor(math.log10(max(raw, 1.0)))
    for factor in (1, 2, 5, 10):
        if base * factor >= raw:
            return base * factor
    return base * 10


def format_ns(ns: float) -> str:
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:.3g} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.4g} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.4g} µs"
    return f"{ns:.0f} ns"


class TimelineCanvas(QWidget):
    sig_selected = Signal(int)  # event index, -1 for none
    sig_view_changed = Signal(object, object)  # t0, t1: absolute ns, beyond 32 bits
    sig_range_selected = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setMinimumHeight(160)
        self.index: TimelineIndex | None = None
        self.t0, self.t1 = 0, 1
        self.scroll_y = 0
        self.selected = -1
        self.range: tuple[int, int] | None = None
        self.row_y = np.zeros(0, np.int32)
        self._press: QPointF | None = None
        self._press_view: tuple[int, int, int] = (0, 1, 0)
        self._selecting = False
        self.last_paint_rows = 0

    # -- model -------------------------------------------------------------------------------
    def set_index(self, index: TimelineIndex | None) -> None:
        self.index = index
        self.selected, self.range, self.scroll_y = -1, None, 0
        if index is not None:
            gaps = np.zeros(index.rows, np.int32)
            gaps[index.lane_first_row[1:-1]] = LANE_GAP
            self.row_y = (np.arange(index.rows) * ROW_H + np.cumsum(gaps)).astype(np.int32)
        self.fit()

    def content_height(self) -> int:
        return int(self.row_y[-1]) + ROW_H + AXIS_H if self.row_y.size else AXIS_H

    # -- view ----------------------------------------------------------------------------------
    def plot_width(self) -> int:
        return max(self.width() - HEADER_W, 1)

    def fit(self) -> None:
        if self.index is None or not len(self.index.trace):
            self.set_view(0, 1)
            return
        start, end = self.index.span
        pad = max((end - start) // 50, 1)
        self.set_view(start - pad, end + pad)

    def set_view(self, t0: int, t1: int) -> None:
        t1 = max(t1, t0 + 10)  # 10 ns is as deep as it goes
        self.t0, self.t1 = int(t0), int(t1)
        self.sig_view_changed.emit(self.t0, self.t1)
        self.update()

    def zoom(self, factor: float, anchor_x: float | None = None) -> None:
        """``factor`` < 1 zooms in, around ``anchor_x`` (widget x) or the centre."""
        x = self.plot_width() / 2 if anchor_x is None else anchor_x - HEADER_W
        t = self.time_at(x + HEADER_W)
        span = (self.t1 - self.t0) * factor
        left = t - span * (x / self.plot_width())
        self.set_view(int(left), int(left + span))

    def pan(self, fraction: float) -> None:
        shift = int((self.t1 - self.t0) * fraction)
        self.set_view(self.t0 + shift, self.t1 + shift)

    def time_at(self, x: float) -> int:
        return int(self.t0 + (x - HEADER_W) * (self.t1 - self.t0) / self.plot_width())

    def x_of(self, t: float) -> float:
        return HEADER_W + (t - self.t0) * self.plot_width() / (self.t1 - self.t0)

    def row_at(self, y: float) -> int:
        if self.index is None or not self.row_y.size:
            return -1
        content_y = y - AXIS_H + self.scroll_y
        row = int(np.searchsorted(self.row_y, content_y, "right")) - 1
        if row < 0 or content_y > self.row_y[row] + ROW_H:
            return -1
        return row

    def event_at(self, x: float, y: float) -> int:
        row = self.row_at(y)
        if row < 0 or x < HEADER_W or self.index is None:
            return -1
        tolerance = int(3 * (self.t1 - self.t0) / self.plot_width())
        return self.index.event_at(row, self.time_at(x), tolerance)

    def select(self, event: int, center: bool = False) -> None:
        self.selected = event
        if center and event >= 0 and self.index is not None:
            trace = self.index.trace
            start, dur = int(trace.start[event]), int(trace.dur[event])
            span = self.t1 - self.t0
            if span < dur * 3 or span > max(dur, 1000) * 400:
                span = max(dur * 8, 2000)
            middle = start + dur // 2
            self.set_view(middle - span // 2, middle + span // 2)
            row_top = int(self.row_y[self.index.row_of(event)])
            visible = self.height() - AXIS_H
            if not self.scroll_y <= row_top <= self.scroll_y + visible - ROW_H:
                self.scroll_y = max(row_top - visible // 2, 0)
        self.sig_selected.emit(event)
        self.update()

    # -- painting ------------------------------------------------------------------------------
    def visible_rows(self) -> list[tuple[int, int]]:
        if self.index is None or not self.row_y.size:
            return []
        top = self.scroll_y
        bottom = top + self.height() - AXIS_H
        first = max(int(np.searchsorted(self.row_y, top - ROW_H, "right")) - 1, 0)
        last = int(np.searchsorted(self.row_y, bottom, "right"))
        return [(r, int(self.row_y[r]) - top) for r in range(first, min(last, self.index.rows))]

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(250, 250, 250))
        if self.index is None:
            painter.setPen(QColor(120, 120, 120))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No trace open")
            painter.end()
            return
        rows = self.visible_rows()
        self.last_paint_rows = len(rows)
        width, height = self.plot_width(), max(self.height() - AXIS_H, 1)
        image, labels = paint(self.index, self.t0, self.t1, width, rows, height, ROW_H)
        qimage = QImage(
            image.data, width, height, width * 4, QImage.Format.Format_RGB32
        )  # 0xFFRRGGBB
        painter.drawImage(HEADER_W, AXIS_H, qimage)
        self._paint_labels(painter, labels)
        self._paint_range(painter)
        self._paint_selection(painter)
        self._paint_headers(painter, rows)
        self._paint_axis(painter)
        painter.end()

    def _paint_labels(self, painter: QPainter, labels: list) -> None:
        if not labels or self.index is None:
            return
        trace = self.index.trace
        metrics = QFontMetrics(painter.font())
        painter.setPen(QColor(255, 255, 255))
        for label in labels:
            rect = QRectF(HEADER_W + label.x0 + 3, AXIS_H + label.y, label.x1 - label.x0 - 6, ROW_H)
            text = metrics.elidedText(
                trace.names[int(trace.name[label.event])],
                Qt.TextElideMode.ElideRight,
                int(rect.width()),
            )
            painter.drawText(rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)

    def _event_rect(self, event: int) -> QRectF:
        assert self.index is not None
        trace = self.index.trace
        x0 = self.x_of(int(trace.start[event]))
        x1 = max(self.x_of(int(trace.start[event] + trace.dur[event])), x0 + 2)
        y = AXIS_H + int(self.row_y[self.index.row_of(event)]) - self.scroll_y
        return QRectF(x0, y, x1 - x0, ROW_H)

    def _paint_selection(self, painter: QPainter) -> None:
        if self.selected < 0 or self.index is None:
            return
        painter.setClipRect(HEADER_W, AXIS_H, self.plot_width(), self.height())
        rect = self._event_rect(self.selected)
        painter.setPen(QPen(QColor(0, 0, 0), 2))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(rect.adjusted(-1, 0, 1, 0))
        partner = self.index.partner(self.selected)
        if partner >= 0:  # flow arrow: API call → the GPU work it queued
            trace = self.index.trace
            api, work = (
                (partner, self.selected)
                if int(trace.kind[partner]) == KIND["cuda_api"]
                else (self.selected, partner)
            )
            a, b = self._event_rect(api), self._event_rect(work)
            start = QPointF(a.left(), a.center().y())
            end = QPointF(b.left(), b.top() if b.top() > a.top() else b.bottom())
            painter.setPen(QPen(QColor(220, 40, 40), 1.5))
            painter.drawLine(start, end)
            angle = math.atan2(end.y() - start.y(), end.x() - start.x())
            head = QPolygonF(
                [
                    end,
                    end - QPointF(math.cos(angle - 0.4) * 9, math.sin(angle - 0.4) * 9),
                    end - QPointF(math.cos(angle + 0.4) * 9, math.sin(angle + 0.4) * 9),
                ]
            )
            painter.setBrush(QColor(220, 40, 40))
            painter.drawPolygon(head)
        painter.setClipping(False)

    def _paint_range(self, painter: QPainter) -> None:
        if self.range is None:
            return
        x0, x1 = sorted((self.x_of(self.range[0]), self.x_of(self.range[1])))
        x0, x1 = max(x0, HEADER_W), min(x1, self.width())
        if x1 > x0:
            painter.fillRect(QRectF(x0, AXIS_H, x1 - x0, self.height()), QColor(30, 90, 200, 45))
            painter.setPen(QColor(30, 90, 200))
            painter.drawText(
                QRectF(x0 + 4, AXIS_H + 2, 200, 16),
                Qt.AlignmentFlag.AlignLeft,
                format_ns(abs(self.range[1] - self.range[0])),
            )

    def _paint_headers(self, painter: QPainter, rows: list[tuple[int, int]]) -> None:
        assert self.index is not None
        painter.fillRect(0, AXIS_H, HEADER_W, self.height(), QColor(238, 240, 244))
        painter.setPen(QColor(40, 40, 40))
        metrics = QFontMetrics(painter.font())
        for row, y in rows:
            title = self.index.row_title(row)
            if not title:
                continue
            painter.setPen(QColor(200, 203, 210))
            painter.drawLine(0, AXIS_H + y - 2, self.width(), AXIS_H + y - 2)
            painter.setPen(QColor(40, 40, 40))
            text = metrics.elidedText(title, Qt.TextElideMode.ElideLeft, HEADER_W - 8)
            painter.drawText(
                QRectF(4, AXIS_H + y, HEADER_W - 8, ROW_H), Qt.AlignmentFlag.AlignVCenter, text
            )

    def _paint_axis(self, painter: QPainter) -> None:
        assert self.index is not None
        painter.fillRect(0, 0, self.width(), AXIS_H, QColor(228, 231, 236))
        origin = self.index.span[0]
        step = nice_step(self.t1 - self.t0, self.plot_width())
        first = math.ceil((self.t0 - origin) / step) * step
        painter.setPen(QColor(60, 60, 60))
        tick = first
        while origin + tick <= self.t1:
            x = self.x_of(origin + tick)
            painter.drawLine(QPointF(x, AXIS_H - 6), QPointF(x, AXIS_H))
            painter.drawText(QPointF(x + 3, AXIS_H - 8), format_ns(tick))
            tick += step
        painter.drawText(QRectF(4, 0, HEADER_W - 8, AXIS_H), Qt.AlignmentFlag.AlignVCenter, "lanes")

    # -- input ---------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta().y() or event.angleDelta().x()
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.scroll_by(-delta // 2)
        else:
            self.zoom(0.8 if delta > 0 else 1.25, event.position().x())
        event.accept()

    def scroll_by(self, dy: int) -> None:
        limit = max(self.content_height() - self.height(), 0)
        self.scroll_y = int(min(max(self.scroll_y + dy, 0), limit))
        self.update()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._press = event.position()
        self._press_view = (self.t0, self.t1, self.scroll_y)
        self._selecting = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        self.setFocus()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if self._press is not None:
            dx, dy = pos.x() - self._press.x(), pos.y() - self._press.y()
            if self._selecting:
                self.range = (self.time_at(self._press.x()), self.time_at(pos.x()))
                self.update()
            elif abs(dx) + abs(dy) > 2:
                t0, t1, scroll = self._press_view
                shift = int(-dx * (t1 - t0) / self.plot_width())
                self.scroll_y = max(int(scroll - dy), 0)
                self.set_view(t0 + shift, t1 + shift)
            return
        found = self.event_at(pos.x(), pos.y())
        if found >= 0 and self.index is not None:
            info = self.index.trace.event(found)
            QToolTip.showText(
                event.globalPosition().toPoint(),
                f"{info['name']}\n{info['kind']} · {format_ns(info['dur_ns'])} · {info['lane']}",
                self,
            )
        else:
            QToolTip.hideText()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        pos, press = event.position(), self._press
        self._press = None
        if press is None:
            return
        moved = abs(pos.x() - press.x()) + abs(pos.y() - press.y())
        if self._selecting and self.range is not None and moved > 2:
            a, b = sorted(self.range)
            self.range = (a, b)
            self.sig_range_selected.emit(a, b)
        elif moved <= 2:
            self.select(self.event_at(pos.x(), pos.y()))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        actions: dict[int, Callable[[], object]] = {
            Qt.Key.Key_W.value: lambda: self.zoom(0.8),
            Qt.Key.Key_S.value: lambda: self.zoom(1.25),
            Qt.Key.Key_A.value: lambda: self.pan(-0.15),
            Qt.Key.Key_D.value: lambda: self.pan(0.15),
            Qt.Key.Key_F.value: self.fit,
            Qt.Key.Key_Escape.value: lambda: self.select(-1),
        }
        if int(key) in actions:
            actions[int(key)]()
            event.accept()
        else:
            super().keyPressEvent(event)
