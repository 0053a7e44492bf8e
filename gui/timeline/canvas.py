"""The timeline's detail view: lanes with headers, a time axis, events painted as one raster
image per frame (``raster.paint``), labels on wide events, the selected event with a flow arrow
to its correlated API call / GPU work, and a selected time range.

Lanes: GPU streams first (the index's order), a click on a lane's header collapses or expands
it, right-click pins it to the top (Nsight Systems' and Perfetto's track controls).

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
from deploylens.gui.timeline.raster import Label, paint

HEADER_W = 240  # the lane labels' column at least …
HEADER_SHARE = 0.3  # … and at most this share of a wide view, as wide as the longest label
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


UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def tick_labels(ticks: list[float], step: float) -> list[str]:
    """Labels for ticks ``step`` ns apart that are always distinct: one unit for all (that of
    the largest tick) and as many decimals as the step needs — 131.20005 ms, not 131.2 ms ten
    times over when zoomed in."""
    if not ticks:
        return []
    largest = max(abs(t) for t in ticks)
    factor, unit = next(((f, u) for f, u in UNITS if largest >= f), UNITS[-1])
    decimals = max(0, math.ceil(-math.log10(step / factor) - 1e-9)) if step < factor else 0
    return [f"{t / factor:.{decimals}f} {unit}" for t in ticks]


class TimelineCanvas(QWidget):
    sig_selected = Signal(int)  # event index, -1 for none
    sig_view_changed = Signal(object, object)  # t0, t1: absolute ns, beyond 32 bits
    sig_range_selected = Signal(object, object)
    sig_scrolled = Signal(int, int)  # scroll position, its maximum (for the lane scrollbar)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setMinimumHeight(160)
        self.index: TimelineIndex | None = None
        self.header_w = HEADER_W  # the lane labels' column (``label_width``)
        self.t0, self.t1 = 0, 1
        self.scroll_y = 0
        self.selected = -1
        self.range: tuple[int, int] | None = None
        self.row_y = np.zeros(0, np.int32)  # y of each row (−1: hidden in a collapsed lane)
        self.shown_rows = np.zeros(0, np.int32)  # rows in display order
        self.shown_y = np.zeros(0, np.int32)
        self.collapsed: set[int] = set()  # lane ids
        self.pinned: list[int] = []  # lane ids, pinned to the top in this order
        self.last_ticks: list[str] = []
        self.last_image_ratio = 1
        self._press: QPointF | None = None
        self._press_view: tuple[int, int, int] = (0, 1, 0)
        self._selecting = False
        self.last_paint_rows = 0

    # -- model -------------------------------------------------------------------------------
    def set_index(self, index: TimelineIndex | None) -> None:
        self.index = index
        self.selected, self.range, self.scroll_y = -1, None, 0
        self.collapsed, self.pinned = set(), []
        self.layout_rows()
        self.header_w = self.label_width()
        self.fit()

    def label_width(self) -> int:
        """The lane labels' column: as wide as the longest lane name needs, from HEADER_W up
        to HEADER_SHARE of the view (it was 240 px at every size: names elided at 4K)."""
        if self.index is None:
            return HEADER_W
        metrics = QFontMetrics(self.font())
        firsts = self.index.lane_first_row[:-1][:4000]
        need = max(
            (metrics.horizontalAdvance("▾ 📌 " + self.index.row_title(int(r))) for r in firsts),
            default=0,
        )
        return int(min(max(HEADER_W, need + 16), max(HEADER_W, HEADER_SHARE * self.width())))

    def lane_order(self) -> list[int]:
        assert self.index is not None
        lanes = len(self.index.lane_depth)
        return self.pinned + [lane for lane in range(lanes) if lane not in self.pinned]

    def layout_rows(self) -> None:
        """Rows on screen in display order: pinned lanes first, a collapsed lane's first row
        only, a gap between lanes."""
        index = self.index
        if index is None:
            self.row_y = self.shown_rows = self.shown_y = np.zeros(0, np.int32)
            return
        rows: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        y = 0
        for lane in self.lane_order():
            first = int(index.lane_first_row[lane])
            count = 1 if lane in self.collapsed else int(index.lane_depth[lane])
            rows.append(np.arange(first, first + count, dtype=np.int32))
            ys.append(y + np.arange(count, dtype=np.int32) * ROW_H)
            y += count * ROW_H + LANE_GAP
        self.shown_rows = np.concatenate(rows) if rows else np.zeros(0, np.int32)
        self.shown_y = np.concatenate(ys) if ys else np.zeros(0, np.int32)
        self.row_y = np.full(index.rows, -1, np.int32)
        self.row_y[self.shown_rows] = self.shown_y
        self.scroll_by(0)
        self.update()

    def toggle_lane(self, lane: int) -> None:
        """Collapse a lane to its first row, or expand it again."""
        (self.collapsed.discard if lane in self.collapsed else self.collapsed.add)(lane)
        self.layout_rows()

    def toggle_pin(self, lane: int) -> None:
        if lane in self.pinned:
            self.pinned.remove(lane)
        else:
            self.pinned.append(lane)
        self.layout_rows()

    def lane_at(self, y: float) -> int:
        """The lane whose header is at widget height ``y``, or -1."""
        row = self.row_at(y)
        return int(self.index.row_lane[row]) if row >= 0 and self.index is not None else -1

    def _row_top(self, row: int) -> int:
        """The y of ``row``, or of its lane's first row when the lane is collapsed."""
        assert self.index is not None
        y = int(self.row_y[row])
        if y < 0:
            y = int(self.row_y[self.index.lane_first_row[self.index.row_lane[row]]])
        return y

    def content_height(self) -> int:
        return int(self.shown_y[-1]) + ROW_H + AXIS_H if self.shown_y.size else AXIS_H

    # -- view ----------------------------------------------------------------------------------
    def plot_width(self) -> int:
        return max(self.width() - self.header_w, 1)

    def full_window(self) -> tuple[int, int] | None:
        """The whole trace with a 2 % margin: the widest view there is (None: no events)."""
        if self.index is None or not len(self.index.trace):
            return None
        start, end = self.index.span
        pad = max((end - start) // 50, 1)
        return start - pad, end + pad

    def fit(self) -> None:
        self.set_view(*(self.full_window() or (0, 1)))

    def set_view(self, t0: int, t1: int) -> None:
        """Show [t0, t1], kept inside the trace: zooming out stops at the whole trace and panning
        stops at its ends (a 6.8 s trace could be zoomed out to −5 s … 15 s of nothing)."""
        t1 = max(t1, t0 + 10)  # 10 ns is as deep as it goes
        full = self.full_window()
        if full is not None:
            low, high = full
            if t1 - t0 >= high - low:
                t0, t1 = low, high
            elif t0 < low:
                t0, t1 = low, low + (t1 - t0)
            elif t1 > high:
                t0, t1 = high - (t1 - t0), high
        self.t0, self.t1 = int(t0), int(t1)
        self.sig_view_changed.emit(self.t0, self.t1)
        self.update()

    def zoom(self, factor: float, anchor_x: float | None = None) -> None:
        """``factor`` < 1 zooms in, around ``anchor_x`` (widget x) or the centre."""
        x = self.plot_width() / 2 if anchor_x is None else anchor_x - self.header_w
        t = self.time_at(x + self.header_w)
        span = (self.t1 - self.t0) * factor
        left = t - span * (x / self.plot_width())
        self.set_view(int(left), int(left + span))

    def pan(self, fraction: float) -> None:
        shift = int((self.t1 - self.t0) * fraction)
        self.set_view(self.t0 + shift, self.t1 + shift)

    def time_at(self, x: float) -> int:
        return int(self.t0 + (x - self.header_w) * (self.t1 - self.t0) / self.plot_width())

    def x_of(self, t: float) -> float:
        return self.header_w + (t - self.t0) * self.plot_width() / (self.t1 - self.t0)

    def row_at(self, y: float) -> int:
        if self.index is None or not self.shown_y.size:
            return -1
        content_y = y - AXIS_H + self.scroll_y
        at = int(np.searchsorted(self.shown_y, content_y, "right")) - 1
        if at < 0 or content_y > self.shown_y[at] + ROW_H:
            return -1
        return int(self.shown_rows[at])

    def event_at(self, x: float, y: float) -> int:
        row = self.row_at(y)
        if row < 0 or x < self.header_w or self.index is None:
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
            row_top = self._row_top(self.index.row_of(event))
            visible = self.height() - AXIS_H
            if not self.scroll_y <= row_top <= self.scroll_y + visible - ROW_H:
                self.scroll_to(max(row_top - visible // 2, 0))
        self.sig_selected.emit(event)
        self.update()

    # -- painting ------------------------------------------------------------------------------
    def visible_rows(self) -> list[tuple[int, int]]:
        if self.index is None or not self.shown_y.size:
            return []
        top = self.scroll_y
        bottom = top + self.height() - AXIS_H
        first = max(int(np.searchsorted(self.shown_y, top - ROW_H, "right")) - 1, 0)
        last = int(np.searchsorted(self.shown_y, bottom, "right"))
        return [
            (int(self.shown_rows[i]), int(self.shown_y[i]) - top)
            for i in range(first, min(last, self.shown_rows.size))
        ]

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
        # On a HiDPI screen the raster is made at device pixels, so events stay sharp at 2×.
        ratio = max(round(self.devicePixelRatioF()), 1)
        width, height = self.plot_width(), max(self.height() - AXIS_H, 1)
        image, physical_labels = paint(
            self.index, self.t0, self.t1, width * ratio,
            [(row, y * ratio) for row, y in rows], height * ratio, ROW_H * ratio, 60.0 * ratio,
        )  # fmt: skip
        qimage = QImage(
            image.data, width * ratio, height * ratio, width * ratio * 4, QImage.Format.Format_RGB32
        )  # 0xFFRRGGBB
        qimage.setDevicePixelRatio(ratio)
        self.last_image_ratio = ratio
        labels = [
            Label(label.x0 / ratio, label.x1 / ratio, label.y // ratio, label.event)
            for label in physical_labels
        ]
        painter.drawImage(self.header_w, AXIS_H, qimage)
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
            rect = QRectF(
                self.header_w + label.x0 + 3, AXIS_H + label.y, label.x1 - label.x0 - 6, ROW_H
            )
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
        y = AXIS_H + self._row_top(self.index.row_of(event)) - self.scroll_y
        return QRectF(x0, y, x1 - x0, ROW_H)

    def _paint_selection(self, painter: QPainter) -> None:
        if self.selected < 0 or self.index is None:
            return
        painter.setClipRect(self.header_w, AXIS_H, self.plot_width(), self.height())
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
        x0, x1 = max(x0, self.header_w), min(x1, self.width())
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
        painter.fillRect(0, AXIS_H, self.header_w, self.height(), QColor(238, 240, 244))
        metrics = QFontMetrics(painter.font())
        index = self.index
        for row, y in rows:
            title = index.row_title(row)
            if not title:
                continue
            lane = int(index.row_lane[row])
            first = row == int(index.lane_first_row[lane])
            if first:
                painter.setPen(QColor(200, 203, 210))
                painter.drawLine(0, AXIS_H + y - 2, self.width(), AXIS_H + y - 2)
                gpu = index.is_gpu_lane(lane)
                if gpu:  # GPU lanes marked, as Nsight Systems groups them
                    painter.fillRect(0, AXIS_H + y, 3, ROW_H, QColor(118, 185, 0))
            many = int(index.lane_depth[lane]) > 1
            mark = ("▸ " if lane in self.collapsed else "▾ ") if first and many else "  "
            pin = "📌 " if first and lane in self.pinned else ""
            painter.setPen(QColor(40, 40, 40) if first else QColor(90, 96, 110))
            text = metrics.elidedText(
                pin + title,
                Qt.TextElideMode.ElideMiddle,
                self.header_w - 8 - metrics.horizontalAdvance(mark),
            )
            painter.drawText(
                QRectF(6, AXIS_H + y, self.header_w - 8, ROW_H), Qt.AlignmentFlag.AlignVCenter,
                mark + text,
            )  # fmt: skip

    def _paint_axis(self, painter: QPainter) -> None:
        """Ticks from the trace's start; labels always distinct (``tick_labels``) and never
        closer than their own width."""
        assert self.index is not None
        painter.fillRect(0, 0, self.width(), AXIS_H, QColor(228, 231, 236))
        origin = self.index.span[0]
        metrics = QFontMetrics(painter.font())
        min_px = 90.0
        for _ in range(4):  # widen the spacing until the labels fit between the ticks
            step = nice_step(self.t1 - self.t0, self.plot_width(), min_px)
            first = math.ceil((self.t0 - origin) / step) * step
            ticks: list[float] = []
            tick = first
            while origin + tick <= self.t1 and len(ticks) < 200:
                ticks.append(tick)
                tick += step
            labels = tick_labels(ticks, step)
            widest = max((metrics.horizontalAdvance(t) for t in labels), default=0)
            if widest + 14 <= step * self.plot_width() / max(self.t1 - self.t0, 1):
                break
            min_px = widest + 16.0
        painter.setPen(QColor(60, 60, 60))
        painter.setClipRect(self.header_w, 0, self.plot_width(), AXIS_H)
        for tick, label in zip(ticks, labels, strict=True):
            x = self.x_of(origin + tick)
            painter.drawLine(QPointF(x, AXIS_H - 6), QPointF(x, AXIS_H))
            painter.drawText(QPointF(x + 3, AXIS_H - 8), label)
        painter.setClipping(False)
        self.last_ticks = [
            label for tick, label in zip(ticks, labels, strict=True)
            if self.x_of(origin + tick) >= self.header_w
        ]  # fmt: skip
        painter.drawText(
            QRectF(4, 0, self.header_w - 8, AXIS_H), Qt.AlignmentFlag.AlignVCenter,
            "lanes (click: fold, right-click: pin)",
        )  # fmt: skip

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
        self.sig_scrolled.emit(self.scroll_y, limit)
        self.update()

    def scroll_to(self, y: int) -> None:
        self.scroll_by(y - self.scroll_y)

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self.header_w = self.label_width()
        self.scroll_by(0)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if pos.x() < self.header_w and pos.y() > AXIS_H and self.index is not None:
            lane = self.lane_at(pos.y())
            if lane >= 0 and event.button() == Qt.MouseButton.RightButton:
                self.toggle_pin(lane)
            elif lane >= 0 and int(self.index.lane_depth[lane]) > 1:
                self.toggle_lane(lane)
            self._press = None
            return
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
                self.scroll_to(int(scroll - dy))
                self.set_view(t0 + shift, t1 + shift)
            return
        found = self.event_at(pos.x(), pos.y())
        if found >= 0 and self.index is not None:
            info = self.index.trace.event(found)
            QToolTip.showText(
                event.globalPosition().toPoint(),
                f"{info.name}\n{info.kind} · {format_ns(info.dur_ns)} · {info.lane}",
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
