"""PySide6 6.12.0 on Python 3.11 aborts the interpreter (bool_dealloc / none_dealloc) after
~1,000 signal emits or ~5,000 calls returning None. The pinned PySide6 must survive many more.
Runs in a subprocess: the failure mode is a fatal abort, not an exception."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QApplication, QGraphicsRectItem, QWidget

class Emitter(QObject):
    flag = Signal(bool)
    payload = Signal(object)

app = QApplication([])
emitter = Emitter()
received = [0, 0]
emitter.flag.connect(lambda value: received.__setitem__(0, received[0] + 1))
emitter.payload.connect(lambda value: received.__setitem__(1, received[1] + 1))
for index in range(N):
    emitter.flag.emit(index % 2 == 0)
    emitter.payload.emit(None if index % 3 else {"i": index})
widget = QWidget()
item = QGraphicsRectItem(0, 0, 1, 1)
brush = QBrush(QColor("red"))
for index in range(N):  # calls that return None
    item.setBrush(brush)
    widget.setObjectName("w")
    widget.resize(10 + index % 5, 10)
print("ok", received[0], received[1], flush=True)
"""

N = 50_000


def test_pyside_survives_many_emits_and_none_returning_calls() -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"N = {N}\n" + SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert "Fatal Python error" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["ok", str(N), str(N)]
