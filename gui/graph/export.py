"""Export the whole graph view (not just the visible part) to PNG or SVG."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter, QTransform
from PySide6.QtSvg import QSvgGenerator

from deploylens.core.errors import UserError
from deploylens.gui.graph.canvas import GraphCanvas

MAX_PIXELS = 12_000  # longest side of a PNG; bigger scenes are scaled down
MARGIN = 20.0


def _scene_rect(canvas: GraphCanvas) -> QRectF:
    if canvas.scene is None:
        raise UserError("There is no graph to export yet.")
    return QRectF(
        -MARGIN, -MARGIN, canvas.scene.width + 2 * MARGIN, canvas.scene.height + 2 * MARGIN
    )


def export_png(canvas: GraphCanvas, path: str | Path, scale: float = 1.0) -> Path:
    rect = _scene_rect(canvas)
    scale = min(scale, MAX_PIXELS / max(rect.width(), rect.height()))
    image = QImage(
        QSize(max(1, int(rect.width() * scale)), max(1, int(rect.height() * scale))),
        QImage.Format.Format_RGB32,
    )
    image.fill(QColor("white"))
    painter = QPainter(image)
    transform = QTransform(scale, 0, 0, scale, -rect.left() * scale, -rect.top() * scale)
    canvas.paint_scene(painter, rect, transform, scale)
    painter.end()
    path = Path(path)
    # PySide6 6.11 stubs say bytes, but the binding accepts only str here (b"PNG" raised)
    if not image.save(str(path), "PNG"):  # type: ignore[call-overload]
        raise UserError(f"Could not write {path}.")
    return path


def export_svg(canvas: GraphCanvas, path: str | Path) -> Path:
    rect = _scene_rect(canvas)
    path = Path(path)
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(int(rect.width()), int(rect.height())))
    generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
    generator.setTitle(canvas.model.ir.title if canvas.model else "graph")
    painter = QPainter(generator)
    transform = QTransform(1, 0, 0, 1, -rect.left(), -rect.top())
    canvas.paint_scene(painter, rect, transform, 1.0)
    painter.end()
    if not path.exists():
        raise UserError(f"Could not write {path}.")
    return path
