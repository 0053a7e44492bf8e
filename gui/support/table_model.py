"""The op × opset × backend matrix as a Qt table model (rows filtered, cells coloured)."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.support.measure import LEVELS
from deploylens.core.support.measured_types import CellAnswer, MeasuredMatrix
from deploylens.core.support.onnx_spec import ABSENT, CHANGED, DEPRECATED, INTRODUCED, UNCHANGED
from deploylens.core.support.tensorrt_table import lookup, table_versions, tensorrt_tables

STATE_COLORS = {
    INTRODUCED: "#2ca02c",
    CHANGED: "#1f77b4",
    UNCHANGED: "#dbe8f5",
    ABSENT: None,
    DEPRECATED: "#c7c7c7",
}
STATE_MARKS = {INTRODUCED: "+", CHANGED: "Δ", UNCHANGED: "", ABSENT: "", DEPRECATED: "×"}
YES_COLOR, NO_COLOR = QColor("#c8e6c9"), QColor("#ffcdd2")


def legend_html() -> str:
    """What the marks and colours mean, shown above the table (it had no legend)."""

    def swatch(color: str, mark: str, words: str) -> str:
        return (f"<span style='background:{color}'>&nbsp;{mark or '&nbsp;'}&nbsp;</span> "
                f"{words}")  # fmt: skip

    opsets = [
        swatch(STATE_COLORS[INTRODUCED] or "", STATE_MARKS[INTRODUCED], "introduced"),
        swatch(STATE_COLORS[CHANGED] or "", STATE_MARKS[CHANGED], "changed"),
        swatch(STATE_COLORS[UNCHANGED] or "", STATE_MARKS[UNCHANGED], "unchanged"),
        swatch(STATE_COLORS[DEPRECATED] or "", STATE_MARKS[DEPRECATED], "deprecated"),
    ]
    backends = [
        swatch(YES_COLOR.name(), "✓", "supported"),
        swatch(PARTIAL_COLOR.name(), "2/5", "measured: input types that pass"),
        swatch(NO_COLOR.name(), "✗", "not supported"),
    ]
    return (
        "opset columns: "
        + " · ".join(opsets)
        + "&nbsp;&nbsp;|&nbsp;&nbsp;backends: "
        + " · ".join(backends)
        + " (hover a cell for why)"
    )


PARTIAL_COLOR = QColor("#ffe0b2")  # some of the op's input types, not all
MAX_TOOLTIP_TYPES = 24
Index = QModelIndex | QPersistentModelIndex


class SupportTableModel(QAbstractTableModel):
    """Rows: ONNX ops. Columns: op, domain, one per opset, ORT providers, TensorRT tables, model."""

    def __init__(self, matrix: SupportMatrix) -> None:
        super().__init__()
        self.matrix = matrix
        self.max_opset = matrix.max_opset.get("ai.onnx", 1)
        self.providers = matrix.ort_providers
        self.trt_versions = table_versions()
        self.rows: list[tuple[str, str]] = matrix.ops()
        self.model_counts: dict[tuple[str, str], int] = {}
        self.model_opsets: dict[str, int] = {}
        self.at_opset = self.max_opset
        self.live: dict[str, bool] | None = None  # the installed parser's importers, by op
        self.live_label = ""
        self.measured: MeasuredCells | None = None  # the probes' answers, once loaded
        self._layout()

    def _layout(self) -> None:
        self.headers = [
            "Op",
            "Domain",
            *[str(o) for o in range(1, self.max_opset + 1)],
            *[f"ORT {p.removesuffix('ExecutionProvider')}" for p in self.providers],
            *[f"TRT {v}" for v in self.trt_versions],
            *([self.live_label] if self.live is not None else []),
            *(["RTX measured", "ORT measured"] if self.measured is not None else []),
            "In model",
        ]
        self.first_opset_column = 2
        self.first_ort_column = 2 + self.max_opset
        self.first_trt_column = self.first_ort_column + len(self.providers)
        self.live_column = self.first_trt_column + len(self.trt_versions)
        self.measured_column = self.live_column + (1 if self.live is not None else 0)
        self.model_column = len(self.headers) - 1

    def set_live(self, label: str, ops: dict[str, bool]) -> None:
        """A column from the installed parser (e.g. "TensorRT-RTX 1.7 (live)")."""
        self.beginResetModel()
        self.live, self.live_label = ops, label
        self._layout()
        self.endResetModel()

    def set_measured(self, data: MeasuredMatrix) -> None:
        """Two columns measured on this machine (``deploylens support --measured``)."""
        self.beginResetModel()
        self.measured = MeasuredCells(data)
        self._layout()
        self.endResetModel()

    # -- filtering ------------------------------------------------------------------------------
    def set_rows(self, rows: list[tuple[str, str]]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def set_model_ops(self, counts: dict[tuple[str, str], int], opsets: dict[str, int]) -> None:
        self.beginResetModel()
        self.model_counts = counts
        self.model_opsets = opsets
        self.at_opset = opsets.get("ai.onnx", self.max_opset)
        self.endResetModel()

    # -- Qt model ----------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if parent.isValid() else len(self.headers)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Vertical and 0 <= section < len(self.rows):
            # the op as the row's header: it stays on screen while the opsets scroll by
            domain, op = self.rows[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return op
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{domain}::{op}"
            return None
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            if self.first_ort_column <= section < self.first_trt_column:
                return f"ONNX Runtime kernel at opset {self.at_opset} (the model's, or the newest)"
            if self.live is not None and section == self.live_column:
                return (
                    "the installed parser, asked live: does it have an importer for the op? "
                    "(a custom-domain op needs a plugin; an importer may still need one)"
                )
            if self.measured is not None and section in self._measured_columns():
                lib = "trt" if section == self.measured_column else "ort"
                return self.measured.header(lib)
            if self.first_trt_column <= section < self.model_column:
                return (
                    "from documentation, not measured: TensorRT's ONNX parser as "
                    "onnx-tensorrt's operators.md tables it"
                )
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        domain, op = self.rows[index.row()]
        column = index.column()
        if column < 2:
            if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                return op if column == 0 else domain
            return None
        if column < self.first_ort_column:
            return self._opset_cell(domain, op, column - 1, role)
        if column < self.first_trt_column:
            provider = self.providers[column - self.first_ort_column]
            verdict = self.matrix.ort_verdict(domain, op, self.at_opset, provider)
            return self._verdict_cell(verdict.ok, verdict.reason, role)
        if self.live is not None and column == self.live_column:
            ok = domain == "ai.onnx" and self.live.get(op, False)
            why = (
                f"{self.live_label}: an importer exists"
                if ok
                else f"{self.live_label}: no importer"
                + (" (another domain: needs a plugin)" if domain != "ai.onnx" else "")
            )
            return self._verdict_cell(ok, why, role)
        if self.measured is not None and column in self._measured_columns():
            lib = "trt" if column == self.measured_column else "ort"
            history = self.matrix.history(domain, op)
            resolved = history.resolve(self.at_opset) if history else None
            return self.measured.cell(lib, domain, op, resolved.since if resolved else 0, role)
        if column < self.model_column:
            version = self.trt_versions[column - self.first_trt_column]
            row = (
                lookup(tensorrt_tables()["versions"][version], op) if domain == "ai.onnx" else None
            )
            ok = bool(row and row["supported"] == "Y")
            text = f"{row['types']}\n{row['restrictions']}".strip() if row else "not in table"
            return self._verdict_cell(ok, text, role)
        count = self.model_counts.get((domain, op), 0)
        if role == Qt.ItemDataRole.DisplayRole:
            return str(count) if count else ""
        return None

    def _measured_columns(self) -> tuple[int, ...]:
        return (self.measured_column, self.measured_column + 1)

    def _opset_cell(self, domain: str, op: str, opset: int, role: int) -> Any:
        history = self.matrix.history(domain, op)
        state = history.state(opset) if history else ABSENT
        if role == Qt.ItemDataRole.DisplayRole:
            return STATE_MARKS[state]
        if role == Qt.ItemDataRole.BackgroundRole:
            color = STATE_COLORS[state]
            return QColor(color) if color else None
        if role == Qt.ItemDataRole.ToolTipRole and history and state != ABSENT:
            version = history.resolve(opset) or history.versions[-1]
            constraints = "\n".join(
                f"{k}: {', '.join(v)}" for k, v in version.type_constraints.items()
            )
            return (
                f"{op} at opset {opset}: version {version.since} ({state})\n"
                f"{version.summary}\n{constraints}"
            )
        return None

    @staticmethod
    def _verdict_cell(ok: bool, text: str, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return "✓" if ok else "✗"
        if role == Qt.ItemDataRole.BackgroundRole:
            return YES_COLOR if ok else NO_COLOR
        if role == Qt.ItemDataRole.ToolTipRole:
            return text or ("supported" if ok else "not supported")
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        return None


class MeasuredCells:
    """The measured matrix as table cells: for an op's schema version at the panel's opset,
    how many of its input types the library took, coloured by all / some / none, and on hover
    each type's state with the library's own words."""

    LEVEL: ClassVar[dict[str, str]] = {
        "trt": "trt-build",
        "ort": "ort-run",
    }  # the questions of core's predictions

    def __init__(self, data: MeasuredMatrix) -> None:
        self.data = data
        self.by_version: dict[str, dict[str, dict[str, CellAnswer]]] = {"trt": {}, "ort": {}}
        for lib in ("trt", "ort"):
            for key, cell in data.library(lib).cells.items():
                prefix, dtype = key.rsplit("::", 1)
                self.by_version[lib].setdefault(prefix, {})[dtype] = cell

    def header(self, lib: str) -> str:
        probes = self.data.versions.get("probes", "?")
        if lib == "trt":
            return (
                f"measured on this machine: {self.data.trt_name()} parsed each probe and built "
                f"it ahead of time for {self.data.versions.get('target', '?')} ({probes} probe "
                "set)"
            )
        return (
            f"measured on this machine: ONNX Runtime {self.data.ort_version()} "
            f"CPU made a session and ran each probe ({probes} probe set)"
        )

    def cell(self, lib: str, domain: str, op: str, since: int, role: int) -> Any:
        cells = self.by_version[lib].get(f"{domain}::{op}::{since}", {})
        fine, unanswered = LEVELS[self.LEVEL[lib]]
        ok = [t for t, c in cells.items() if c.state in fine]
        judged = [t for t, c in cells.items() if c.state not in unanswered]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{len(ok)}/{len(judged)}" if judged else "—"
        if role == Qt.ItemDataRole.BackgroundRole and judged:
            if len(ok) == len(judged):
                return YES_COLOR
            return NO_COLOR if not ok else PARTIAL_COLOR
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(lib, domain, op, since, cells)
        return None

    def _tooltip(
        self, lib: str, domain: str, op: str, since: int, cells: dict[str, CellAnswer]
    ) -> str:
        name = "TensorRT-RTX" if lib == "trt" else "ONNX Runtime CPU"
        if not cells:
            missing = {
                k.rsplit("::", 1)[1]: why
                for k, why in self.data.unprobed.items()
                if k.startswith(f"{domain}::{op}::{since}::")
            }
            reason = "; ".join(f"{t}: {w}" for t, w in list(missing.items())[:3])
            return f"{op}-{since}: not probed" + (f" ({reason})" if reason else "")
        lines = [f"{op}-{since} measured on {name}, per input type:"]
        for dtype, cell in list(cells.items())[:MAX_TOOLTIP_TYPES]:
            said = f" — {cell.message[:140]}" if cell.message else ""
            lines.append(f"  {dtype}: {cell.state}{said}")
        if len(cells) > MAX_TOOLTIP_TYPES:
            lines.append(f"  … {len(cells) - MAX_TOOLTIP_TYPES} more (deploylens support --op "
                         f"{op} --measured)")  # fmt: skip
        return "\n".join(lines)
