"""An honest empty panel: says what will be here and which issue brings it — never fake content."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


class EmptyStatePanel(QWidget):
    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"empty-{title.lower().replace(' ', '-')}")
        heading = QLabel(f"<h3>{title}</h3>")
        body = QLabel(text)
        body.setWordWrap(True)
        body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        body.setStyleSheet("color: palette(mid);")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        for label in (heading, body):
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            layout.addWidget(label)
        layout.addStretch(2)
        self.text = text


# Panel title -> what it will hold and which issue brings it.
UPCOMING_PANELS: dict[str, str] = {
    "Timeline": "The profiler timeline arrives with issue #8: streams, H2D/D2H copies and "
    "per-kernel latency from PyTorch, ONNX Runtime, Nsight Systems and trtexec traces.",
}
