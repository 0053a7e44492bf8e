"""A pyqtgraph plot made on first use. pyqtgraph costs 0.2–0.3 s to import — a third of the
window's start — and only the Timeline's histogram, the sweep view, the sensitivity curve and
the validation's error-vs-depth plot use it: the window opens without it, and a plot is made
when it is first painted or filled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget


class LazyPlot(QWidget):
    """Holds the place of a ``pyqtgraph.PlotWidget``; ``plot`` makes it (and runs ``setup(pg,
    plot)``, which adds the plot's items) the first time it is asked for."""

    def __init__(
        self, setup: Callable[[Any, Any], None] | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._setup = setup
        self._plot: Any = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        return self._plot is not None

    @property
    def plot(self) -> Any:
        """The ``PlotWidget`` (made now if it was not yet)."""
        if self._plot is None:
            import pyqtgraph as pg

            plot = pg.PlotWidget(background="w")
            if self._setup is not None:
                self._setup(pg, plot)
            self.layout().addWidget(plot)
            self._plot = plot
        return self._plot

    def paintEvent(self, event: QPaintEvent) -> None:
        """Seen: its axes and labels come, as an empty plot (filled when data comes). Not on
        ``showEvent``: a dock tabbed behind another is shown, only never painted."""
        super().paintEvent(event)
        if self._plot is None:  # not while painting; never once this widget is gone
            QTimer.singleShot(0, self, lambda: self.plot)
