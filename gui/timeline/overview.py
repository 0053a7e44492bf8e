"""The overview strip: the whole trace, one thin line per lane (density-aggregated by the same
raster), with the detail view's region drawn over it. Click or drag moves the region; Shift+drag
draws a new one. The image is computed once per size, not per frame."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from deploylens.core.trace.index import TimelineIndex
from deploylens.gui.timeline.canvas import HEADER_W
from deploylens.gui.timeline.raster import paint

HEIGHT = 56


class TimelineOverview(QWidget):
    sig_navigate = Signal(object, object)  # t0, t1 (ns)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedHeight(HEIGHT)
        self.index: TimelineIndex | None = None
        self.region = (0, 1)
        self._image: tuple[tuple[int, int], np.ndarray] | None = None
        self._drag: tuple[float, int, int] | None = None
        self._new_region = False
        # the detail view's lane-label column, so both plots share their time axis' x
        self.header_w: Callable[[], int] = lambda: HEADER_W

    def set_index(self, index: TimelineIndex | None) -> None:
        self.index, self._image = index, None
        self.update()

    def set_region(self, t0: int, t1: int) -> None:
        self.region = (t0, t1)
        self.update()

    def _span(self) -> tuple[int, int]:
        assert self.index is not None
        start, end = self.index.span
        return start, max(end, start + 1)

    def _x(self, t: float) -> float:
        start, end = self._span()
        return self.header_w() + (t - start) * (self.width() - self.header_w()) / (end - start)

    def _t(self, x: float) -> int:
        start, end = self._span()
        return int(
            start + (x - self.header_w()) * (end - start) / max(self.width() - self.header_w(), 1)
        )

    def image(self) -> np.ndarray:
        assert self.index is not None
        size = (self.width() - self.header_w(), HEIGHT)
        if self._image is None or self._image[0] != size:
            lanes = self.index.lane_first_row[:-1]
            row_h = max(HEIGHT // max(len(lanes), 1), 2)
            rows = [(int(r), i * row_h) for i, r in enumerate(lanes) if (i + 1) * row_h <= HEIGHT]
            start, end = self._span()
            pixels, _ = paint(self.index, start, end, max(size[0], 1), rows, HEIGHT, row_h, 1e9)
            self._image = (size, pixels)
        return self._image[1]

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(238, 240, 244))
        if self.index is None or self.width() <= self.header_w():
            painter.end()
            return
        pixels = self.image()
        qimage = QImage(
            pixels.data,
            pixels.shape[1],
            pixels.shape[0],
            pixels.shape[1] * 4,
            QImage.Format.Format_RGB32,
        )
        painter.drawImage(self.header_w(), 0, qimage)
        painter.setPen(QColor(60, 60, 60))
        painter.drawText(
            QRectF(4, 0, self.header_w() - 8, HEIGHT), Qt.AlignmentFlag.AlignVCenter, "overview"
        )
        x0, x1 = self._x(self.region[0]), self._x(self.region[1])
        x1 = max(x1, x0 + 3)
        painter.fillRect(
            QRectF(self.header_w(), 0, max(x0 - self.header_w(), 0), HEIGHT), QColor(0, 0, 0, 50)
        )
        painter.fillRect(QRectF(x1, 0, max(self.width() - x1, 0), HEIGHT), QColor(0, 0, 0, 50))
        painter.setPen(QPen(QColor(30, 90, 200), 2))
        painter.drawRect(QRectF(x0, 1, x1 - x0, HEIGHT - 2))
        painter.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self.index is None:
            return
        x = event.position().x()
        self._new_region = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        t0, t1 = self.region
        if self._new_region:
            self._drag = (x, t0, t1)
            return
        if not self._x(t0) <= x <= self._x(t1):  # click outside: centre the region there
            half = (t1 - t0) // 2
            t0, t1 = self._t(x) - half, self._t(x) + half
            self.sig_navigate.emit(t0, t1)
        self._drag = (x, t0, t1)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._drag is None:
            return
        x0, t0, t1 = self._drag
        x = event.position().x()
        if self._new_region:
            a, b = sorted((self._t(x0), self._t(x)))
            if b > a:
                self.sig_navigate.emit(a, b)
            return
        shift = self._t(x) - self._t(x0)
        self.sig_navigate.emit(t0 + shift, t1 + shift)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._drag = None
