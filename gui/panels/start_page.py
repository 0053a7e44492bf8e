"""The first thing an empty window shows: what to do first — open a model, a bundled sample,
start from PyTorch, open a trace or an engine — and the recent files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.samples import sample_models

ACTIONS = (
    ("open", "Open a model or project…", "an .onnx file or a .deploylens.toml project (Ctrl+O)"),
    ("pytorch", "Start from PyTorch…", "export a torchvision model, a .pt/.pt2 or your own code"),
    ("trace", "Open a profiler trace…", "Kineto/Chrome JSON, ONNX Runtime, Nsight SQLite, trtexec"),
    (
        "engine",
        "Open engine layers…",
        "trtexec --exportLayerInfo JSON (a TensorRT engine's layers)",
    ),
)


class StartPage(QWidget):
    sig_action = Signal(str)  # one of ACTIONS' keys
    sig_open_path = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        title = QLabel("<h2>DeployLens</h2>PyTorch → ONNX → TensorRT: export, check, build and "
                       "profile in one place.")  # fmt: skip
        title.setWordWrap(True)
        self.buttons: dict[str, QPushButton] = {}
        actions = QGridLayout()
        for row, (key, text, hint) in enumerate(ACTIONS):
            button = QPushButton(text)
            button.setMinimumHeight(34)
            button.clicked.connect(lambda _=False, k=key: self.sig_action.emit(k))
            self.buttons[key] = button
            note = QLabel(hint)
            note.setStyleSheet("color: #52606d")
            actions.addWidget(button, row, 0)
            actions.addWidget(note, row, 1)
        actions.setColumnStretch(1, 1)
        self.samples = QListWidget()
        for sample in sample_models():
            item = QListWidgetItem(
                f"{sample.name} — {sample.about}" if sample.about else sample.name
            )
            item.setData(Qt.ItemDataRole.UserRole, str(sample.path))
            item.setToolTip(str(sample.path))
            self.samples.addItem(item)
        self.samples.itemActivated.connect(self._open_item)
        self.samples.itemClicked.connect(self._open_item)
        self.recent = QListWidget()
        self.recent.itemActivated.connect(self._open_item)
        self.recent.itemClicked.connect(self._open_item)
        lists = QGridLayout()
        for column, (title_text, widget) in enumerate(
            (("Open a bundled sample", self.samples), ("Recent files", self.recent))
        ):
            box = QGroupBox(title_text)
            inner = QVBoxLayout(box)
            inner.addWidget(widget)
            lists.addWidget(box, 0, column)
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(24, 18, 24, 18)
        layout.addWidget(title)
        layout.addSpacing(8)
        layout.addLayout(actions)
        layout.addSpacing(8)
        layout.addLayout(lists, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for path in paths:
            item = QListWidgetItem(f"{Path(path).name} — {Path(path).parent}")
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            self.recent.addItem(item)
        if not paths:
            self.recent.addItem("(nothing opened yet)")

    def _open_item(self, item: QListWidgetItem) -> None:
        path = item.data(Qt.ItemDataRole.UserRole)
        if path:
            self.sig_open_path.emit(str(path))
