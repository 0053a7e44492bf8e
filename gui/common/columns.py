"""Column widths that keep every column on screen: as wide as their content when the view has
room, else the widest ones shrink (their cells elide; the tooltip has the full text) — never a
Value column pushed off to the right behind a scrollbar."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QHeaderView, QTableView, QTreeView

MIN_WIDTH = 56


def fit_columns(
    view: QTreeView | QTableView, stretch: int = -1, floor: dict[int, int] | None = None
) -> None:
    """Size ``view``'s visible columns to their content, then shrink the widest until they fit
    the viewport; the ``stretch`` column (default: the last) takes any room left; ``floor``
    gives columns that must keep a minimum width. No column is ever narrower than its header."""
    header: QHeaderView = view.header() if isinstance(view, QTreeView) else view.horizontalHeader()
    columns = [c for c in range(header.count()) if not header.isSectionHidden(c)]
    if not columns:
        return
    header.setStretchLastSection(False)
    for column in columns:
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        view.resizeColumnToContents(column)
    metrics = header.fontMetrics()
    model = view.model()
    minimum = {}
    for column in columns:
        title = str(model.headerData(column, header.orientation()) or "") if model else ""
        minimum[column] = max(
            MIN_WIDTH, metrics.horizontalAdvance(title) + 24, (floor or {}).get(column, 0)
        )
    widths = {c: max(view.columnWidth(c), minimum[c]) for c in columns}
    room = max(view.viewport().width() - 2, sum(minimum.values()))
    while sum(widths.values()) > room:
        widest = max(columns, key=lambda c: widths[c] - minimum[c])
        excess = sum(widths.values()) - room
        give = min(excess, widths[widest] - minimum[widest])
        if give <= 0:
            break
        widths[widest] -= max(give if give < 40 else give // 2, 1)
    spare = room - sum(widths.values())
    if spare > 0:  # the stretch column takes what is left
        widths[columns[stretch] if stretch < 0 else stretch] += spare
    for column in columns:
        view.setColumnWidth(column, widths[column])


def header_width(view: QTableView | QTreeView, column: int, padding: int = 16) -> int:
    """The width ``column``'s header text needs (plus margins): a floor for fixed widths."""
    header = view.header() if isinstance(view, QTreeView) else view.horizontalHeader()
    model = view.model()
    title = str(model.headerData(column, header.orientation()) or "") if model else ""
    return header.fontMetrics().horizontalAdvance(title) + padding


def set_widths(view: QTableView | QTreeView, widths: dict[int, int]) -> None:
    """Fixed column widths, none narrower than its header (no elided header)."""
    for column, width in widths.items():
        view.setColumnWidth(column, max(width, header_width(view, column)))


def compact_rows(view: QTableView) -> None:
    """Rows one text line high (Qt's default leaves twice that on some styles)."""
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 8)


class _Refit(QObject):
    def __init__(self, view: QTableView | QTreeView, fit: Callable[[], None]) -> None:
        super().__init__(view)
        self.view, self.fit, self.width = view, fit, -1

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() not in (QEvent.Type.Resize, QEvent.Type.Show):
            return False
        try:
            width = self.view.viewport().width()
        except RuntimeError:  # the view is being torn down
            return False
        if width != self.width:
            self.width = width  # only a new width refits: a scrollbar appearing cannot loop
            self.fit()
        return False


def keep_fitted(view: QTableView | QTreeView, fit: Callable[[], None]) -> None:
    """Run ``fit`` whenever ``view`` is shown or resized: widths fitted while a tab was hidden
    (a viewport of a few pixels) squeezed a name column to its minimum for good."""
    viewport = view.viewport()
    refit = _Refit(view, fit)
    refit.setParent(viewport)  # goes with the viewport it watches
    viewport.installEventFilter(refit)


def name_floor(view: QTableView | QTreeView, names: list[str], share: float = 0.45) -> int:
    """A name column's minimum: the longest name, but at most ``share`` of the view (and at
    least 220 px when the view has room) — C++ kernel names elide in the middle beyond it."""
    longest = max((view.fontMetrics().horizontalAdvance(n) for n in names[:2000]), default=0)
    cap = max(220, int(share * view.viewport().width()))
    return min(longest + 24, cap)
