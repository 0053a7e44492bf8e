"""Minimap: the whole scene in miniature with the visible region; click or drag to move there."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QResizeEvent,
)
from PySide6.QtWidgets import QWidget

from deploylens.core.graph.scene import BOX_FRAME
from deploylens.gui.graph.canvas import GraphCanvas


class Minimap(QWidget):
    def __init__(self, canvas: GraphCanvas, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.canvas = canvas
        self.setFixedHeight(150)
        self.setMinimumWidth(160)
        self._image: QImage | None = None
        self._image_scene: object | None = None
        canvas.sig_view_changed.connect(self.update)

    def _fit(self) -> tuple[float, float, float]:
        scene = self.canvas.scene
        assert scene is not None
        s = min(
            (self.width() - 8) / max(scene.width, 1.0), (self.height() - 8) / max(scene.height, 1.0)
        )
        ox = (self.width() - scene.width * s) / 2
        oy = (self.height() - scene.height * s) / 2
        return s, ox, oy

    def _render(self) -> QImage:
        scene = self.canvas.scene
        image = QImage(self.size(), QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor(255, 255, 255, 230))
        if scene is None or not len(scene.box_kind):
            return image
        s, ox, oy = self._fit()
        painter = QPainter(image)
        painter.setPen(Qt.PenStyle.NoPen)
        rects = scene.box_rect * s + np.array([ox, oy, ox, oy])
        for frame, colour in ((True, QColor("#dfe7f0")), (False, QColor("#5b7083"))):
            chosen = rects[(scene.box_kind == BOX_FRAME) == frame]
            painter.setBrush(colour)
            painter.drawRects(
                [
                    QRectF(x0, y0, max(x1 - x0, 1), max(y1 - y0, 1))
                    for x0, y0, x1, y1 in chosen.tolist()
                ]
            )
        painter.end()
        return image

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._image = None  # re-render at the new size
        super().resizeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        scene = self.canvas.scene
        if scene is not self._image_scene or self._image is None:
            self._image = self._render()
            self._image_scene = scene
        painter.drawImage(0, 0, self._image)
        painter.setPen(QPen(QColor("#9aa5b1")))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        if scene is not None:
            s, ox, oy = self._fit()
            view = self.canvas.visible_rect()
            painter.setPen(QPen(QColor("#ff7f0e"), 1.5))
            painter.drawRect(
                QRectF(view.x() * s + ox, view.y() * s + oy, view.width() * s, view.height() * s)
            )
        painter.end()

    def _move_to(self, point: QPointF) -> None:
        if self.canvas.scene is None:
            return
        s, ox, oy = self._fit()
        self.canvas.center = QPointF((point.x() - ox) / s, (point.y() - oy) / s)
        self.canvas.update()
        self.canvas.sig_view_changed.emit()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._move_to(event.position())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._move_to(event.position())
