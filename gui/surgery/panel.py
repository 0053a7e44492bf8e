"""Surgery view: edit the open ONNX graph step by step — fold constants, a built-in pattern,
extract the nodes chosen in the graph, replace them by one plugin node — each step run in the
worker on the original model (the chain is the truth, so undo/redo replays it), the edited
model opened in the graph with what changed painted, and for every step: edited vs original
through ONNX Runtime and the TensorRT(-RTX) parser's verdict. The chain saves in the project and
as a steps file that ``deploylens surgery MODEL --steps FILE`` replays."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text
from deploylens.core.surgery.patterns import PATTERNS
from deploylens.core.surgery.request import SurgeryRequest, default_output
from deploylens.core.surgery.result import GraphDiff, SurgeryResult
from deploylens.core.surgery.steps import (
    Step,
    reproducer_script,
    steps_from_toml,
    steps_to_toml,
)
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.common.styles import BAD_STYLE, IDLE_STYLE, VERDICT_STYLES
from deploylens.gui.job_manager import JobManager

DIFF_OVERLAY = "surgery: changed nodes"


def parse_attrs(text: str) -> dict[str, Any]:
    """``plugin_version=1; alpha=0.5; axes=1,2`` → typed attributes (int, float, int list,
    else text). An entry without ``=`` is an error, not a silently dropped attribute."""
    attrs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UserError(f"attribute {part!r} is not name=value")
        value = value.strip()
        attrs[key.strip()] = _typed(value)
    return attrs


def _typed(value: str) -> Any:
    if "," in value:
        items = [v.strip() for v in value.split(",") if v.strip()]
        if all(_is_int(v) for v in items):
            return [int(v) for v in items]
    if _is_int(value):
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value


def _is_int(value: str) -> bool:
    return value.lstrip("-").isdigit()


class SurgeryPanel(QWidget):
    sig_open_model = Signal(str)  # the edited model (or the original, after undoing all)
    sig_node_selected = Signal(str)
    sig_message = Signal(str)

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.base = ""  # the original model every step is applied to
        self.current = ""  # what the graph shows: base, or the last edited output
        self.steps: list[Step] = []
        self.redo_stack: list[Step] = []
        self.job: Any = None
        self.pending: list[Step] | None = None  # the chain the running job applies
        self.report: SurgeryResult | None = None
        self.chosen: list[str] = []  # node names chosen in the graph
        self.selection_source: Any = None  # the shell sets: () -> list[str]
        self.graph_source: Any = None  # the shell sets: () -> the shown GraphProto or None
        self.banner = QLabel("Open a model to edit its graph.")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(IDLE_STYLE)
        self.chosen_label = QLabel(
            "No nodes chosen: Shift+drag in the graph, or highlight "
            "upstream/downstream from a node's menu."
        )
        self.chosen_label.setWordWrap(True)
        self.pattern = QComboBox()
        self.pattern.addItems(list(PATTERNS))
        self.plugin_op = QLineEdit()
        self.plugin_op.setPlaceholderText("op type, e.g. MyLayerNorm")
        self.plugin_domain = QLineEdit("trt.plugins")
        self.plugin_attrs = QLineEdit()
        self.plugin_attrs.setPlaceholderText("plugin_version=1; plugin_namespace=; epsilon=1e-5")
        self.inherit = QCheckBox("also take the chosen nodes' attributes (conv_strides, …)")
        self.inherit.setChecked(True)
        self.buttons: dict[str, QPushButton] = {}
        self.step_list = QListWidget()
        self.diff = QTreeWidget()
        self.diff.setHeaderLabels(["Node", "Change"])
        header = self.diff.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # names are long
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.diff.itemClicked.connect(self._on_diff_item)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self._build()
        self._refresh_buttons()

    def _button(self, key: str, text: str, slot: Any) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(slot)
        self.buttons[key] = button
        return button

    def _build(self) -> None:
        actions = QHBoxLayout()
        actions.addWidget(self._button("fold", "Fold constants", self.fold))
        actions.addWidget(self.pattern)
        actions.addWidget(self._button("pattern", "Apply pattern", self.apply_pattern))
        actions.addWidget(self._button("extract", "Extract chosen nodes", self.extract))
        actions.addStretch(1)
        for key, text, slot in (
            ("undo", "Undo", self.undo),
            ("redo", "Redo", self.redo),
            ("cancel", "Cancel", self.cancel),
            ("load", "Load steps…", self._choose_load),
            ("save", "Save steps…", self._choose_save),
        ):
            actions.addWidget(self._button(key, text, slot))
        plugin = QFormLayout()
        plugin.addRow("Plugin node", self.plugin_op)
        plugin.addRow("Domain", self.plugin_domain)
        plugin.addRow("Attributes", self.plugin_attrs)
        plugin.addRow("", self.inherit)
        plugin.addRow(
            "", self._button("replace", "Replace chosen nodes by this node", self.replace)
        )
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.chosen_label)
        left_layout.addLayout(plugin)
        left_layout.addWidget(QLabel("Steps (applied to the original, in order)"))
        left_layout.addWidget(self.step_list, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.diff)
        right.addWidget(self.details)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(actions)
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)

    # -- the model and the chosen nodes ------------------------------------------------------------
    def model_opened(self, opened: OpenedModel) -> None:
        """The panel contract (gui/common/opened.py): the model and its [surgery] table."""
        self.set_model(opened.path, opened.table("surgery"))

    def set_model(self, path: str, table: dict[str, Any] | None = None) -> None:
        """A model opened. Our own output keeps the chain; a project restores its chain; any
        other model starts a new one."""
        if path in (self.current, self.base) and self.base and not table:
            return  # our own output, or the original we apply every step to
        self.current = path
        if table and "request" in table:  # the chain's own request, read strictly
            try:
                request = SurgeryRequest.from_project(table["request"], "surgery")
            except UserError as exc:
                self.base, self.steps = path, []
                self._set_banner(exc.message, BAD_STYLE)
                return
            self.base, self.steps = request.model, request.steps
        else:
            self.base, self.steps = path, []
        self.redo_stack = []
        self.report = None  # the last model's diff, details and chosen nodes go with it
        self.diff.clear()
        self.details.clear()
        self.set_chosen([])
        self._show_steps()
        self._set_banner(
            f"{len(self.steps)} step(s) on {Path(self.base).name}."
            if self.steps
            else "Choose nodes in the graph, or fold / apply a pattern to the whole model.",
            IDLE_STYLE,
        )
        self._refresh_buttons()

    def start_on(self, path: str, patterns: list[str]) -> None:
        """The export panel's surgery rung: a fresh chain of ``patterns`` on ``path``."""
        self.base = self.current = path
        self.steps, self.redo_stack = [], []
        self._show_steps()
        if patterns:
            self.run_chain([Step(op="pattern", pattern=p) for p in patterns])
        else:
            self._set_banner(f"Editing {Path(path).name}.", IDLE_STYLE)
            self._refresh_buttons()

    def set_chosen(self, names: list[str]) -> None:
        self.chosen = list(names)
        if names:
            shown = ", ".join(names[:4]) + (f" … (+{len(names) - 4})" if len(names) > 4 else "")
            self.chosen_label.setText(f"{len(names)} node(s) chosen: {shown}")
        else:
            self.chosen_label.setText(
                "No nodes chosen: Shift+drag in the graph, or highlight "
                "upstream/downstream from a node's menu."
            )
        self._refresh_buttons()

    def refresh_chosen(self) -> None:
        if self.selection_source is not None:
            self.set_chosen(self.selection_source())

    def project_table(self) -> dict[str, Any]:
        """The chain as its surgery request's own project table (the model it applies to and
        its steps)."""
        return {"request": SurgeryRequest(model=self.base, steps=self.steps).project_table()}

    def populate_menu(self, menu: QMenu) -> None:
        """The graph's context menu gets the surgery actions (the shell wires it)."""
        self.refresh_chosen()
        sub = menu.addMenu("Surgery")
        sub.setEnabled(bool(self.base) and self.job is None)
        sub.addAction("Fold constants", self.fold)
        patterns = sub.addMenu("Apply pattern")
        for name in PATTERNS:
            patterns.addAction(name, partial(self.apply_pattern, name))
        extract = sub.addAction(f"Extract the {len(self.chosen)} chosen node(s)", self.extract)
        extract.setEnabled(bool(self.chosen))
        replace = sub.addAction("Replace the chosen nodes by a plugin node…", self._focus_plugin)
        replace.setEnabled(bool(self.chosen))

    def _focus_plugin(self) -> None:
        self.plugin_op.setFocus()
        self.sig_message.emit("Name the plugin node in the Surgery panel, then 'Replace'.")

    # -- the actions -------------------------------------------------------------------------------
    def fold(self) -> None:
        self.push(Step(op="fold"))

    def apply_pattern(self, name: str | None = None) -> None:
        self.push(Step(op="pattern", pattern=name or self.pattern.currentText()))

    def extract(self) -> None:
        self.refresh_chosen()
        if not self.chosen:
            self._set_banner("Choose nodes in the graph first (Shift+drag).", BAD_STYLE)
            return
        try:
            inputs, outputs = self._boundary()
        except UserError as exc:
            self._set_banner(exc.message, BAD_STYLE)
            return
        self.push(Step(op="extract", inputs=inputs, outputs=outputs))

    def replace(self) -> None:
        self.refresh_chosen()
        try:
            if not self.chosen:
                raise UserError("Choose nodes in the graph first (Shift+drag).")
            if not self.plugin_op.text().strip():
                raise UserError("Name the plugin node's op type.")
            attrs = parse_attrs(self.plugin_attrs.text())
        except UserError as exc:
            self._set_banner(exc.message, BAD_STYLE)
            return
        self.push(
            Step(
                op="replace",
                nodes=self.chosen,
                new_op=self.plugin_op.text().strip(),
                domain=self.plugin_domain.text().strip(),
                attrs=attrs,
                inherit_attrs=self.inherit.isChecked(),
            )
        )

    def _boundary(self) -> tuple[list[str], list[str]]:
        """From the graph the document already parsed (no second parse on the UI thread)."""
        from deploylens.core.surgery.diff import boundary

        graph = self.graph_source() if self.graph_source is not None else None
        if graph is None:
            raise UserError("The graph is still loading: extract once it is shown.")
        return boundary(graph, self.chosen)

    def push(self, step: Step) -> None:
        """Run the chain plus ``step``; it joins the chain only when the worker succeeded."""
        try:
            step.check()
        except UserError as exc:
            self._set_banner(exc.message, BAD_STYLE)
            return
        self.redo_stack = []
        self.run_chain([*self.steps, step])

    def undo(self) -> None:
        if self.steps and self.job is None:
            self.redo_stack.append(self.steps[-1])
            self.run_chain(self.steps[:-1], undoing=True)

    def redo(self) -> None:
        if self.redo_stack and self.job is None:
            step = self.redo_stack.pop()
            self.run_chain([*self.steps, step], keep_redo=True)

    def run_chain(self, chain: list[Step], undoing: bool = False, keep_redo: bool = False) -> None:
        if not self.base:
            self._set_banner("Open a model first.", BAD_STYLE)
            return
        if not chain:  # everything undone: the original again
            self.steps, self.report = [], None
            self._show_steps()
            self.diff.clear()
            self.details.setPlainText("")
            self._set_banner("Every step undone: the original model.", IDLE_STYLE)
            self.current = self.base
            self.sig_open_model.emit(self.base)
            self._refresh_buttons()
            return
        request = SurgeryRequest(model=self.base, steps=chain, output=self.output_path())
        self.pending = chain
        self.job = self.jobs.submit_request(request, f"Surgery on {Path(self.base).name}")
        self.job.sig_progress.connect(
            lambda f, t: self._set_banner(f"{chain[-1].title()} … {t}", IDLE_STYLE)
        )
        self.job.on_finished(self._finished)
        self.job.sig_failed.connect(lambda failure: self._failed(failure, undoing, keep_redo))
        self._set_banner(f"{chain[-1].title()} …", IDLE_STYLE)
        self._refresh_buttons()

    def output_path(self) -> str:
        return default_output(self.base)

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _failed(self, failure: JobFailure, undoing: bool, keep_redo: bool) -> None:
        self.job, self.pending = None, None
        if undoing and self.redo_stack:
            self.redo_stack.pop()  # the undo did not happen
        self._set_banner(f"{failure.message}\n{failure.hint}".strip(), BAD_STYLE)
        self._refresh_buttons()

    def _finished(self, report: SurgeryResult) -> None:
        self.job = None
        pending = self.pending or []
        # a pattern that matched nothing is said in the details, never kept as a step
        self.steps = [pending[i] for i in report.kept]
        self.pending = None
        self.report = report
        self._show_steps()
        self._show_diff(report.diff)
        self.details.setPlainText(report.summary())
        verdict = report.verdict()  # the CLI's first line and exit code: the same sentence
        self._set_banner(verdict.word, VERDICT_STYLES[verdict.severity])
        self.current = report.output
        self.sig_open_model.emit(report.output)
        self._refresh_buttons()

    def _show_steps(self) -> None:
        self.step_list.clear()
        self.step_list.addItems([f"{i}. {s.title()}" for i, s in enumerate(self.steps, 1)])

    def _show_diff(self, diff: GraphDiff) -> None:
        self.diff.clear()
        for kind, names in (
            ("added", diff.added),
            ("changed", diff.changed),
            ("removed", diff.removed),
        ):
            top = QTreeWidgetItem([f"{kind} ({len(names)})", ""])
            self.diff.addTopLevelItem(top)
            for name in names:
                top.addChild(QTreeWidgetItem([name, kind]))
            top.setExpanded(kind != "removed" or len(names) <= 20)

    def diff_overlay(self) -> dict[str, str]:
        """``{node: "added" | "changed"}`` for the edited graph (removed nodes are not in it)."""
        return self.report.diff_overlay() if self.report is not None else {}

    def _on_diff_item(self, item: QTreeWidgetItem) -> None:
        if item.parent() is not None and item.text(1) != "removed":
            self.sig_node_selected.emit(item.text(0))

    # -- steps files -------------------------------------------------------------------------------
    def _choose_save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save surgery steps", "", "*.toml")
        if path:
            self.save_steps(path)

    def save_steps(self, path: str) -> None:
        """The steps file, and the onnx-graphsurgeon reproducer beside it."""
        atomic_write_text(path, steps_to_toml(self.steps))
        script = str(Path(path).with_suffix(".py"))
        atomic_write_text(script, reproducer_script(self.base, self.output_path(), self.steps))
        self.sig_message.emit(f"Saved {path} and {Path(script).name}")

    def _choose_load(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load surgery steps", "", "*.toml")
        if path:
            self.load_steps(path)

    def load_steps(self, path: str) -> None:
        try:
            chain = steps_from_toml(Path(path).read_text(encoding="utf-8"), Path(path).name)
        except (OSError, UserError) as exc:
            self._set_banner(getattr(exc, "message", str(exc)), BAD_STYLE)
            return
        self.redo_stack = []
        self.run_chain(chain)

    def _set_banner(self, text: str, style: str) -> None:
        self.banner.setText(text)
        self.banner.setStyleSheet(style)

    def _refresh_buttons(self) -> None:
        idle = self.job is None and bool(self.base)
        for key in ("fold", "pattern", "load"):
            self.buttons[key].setEnabled(idle)
        self.buttons["extract"].setEnabled(idle and bool(self.chosen))
        self.buttons["replace"].setEnabled(idle and bool(self.chosen))
        self.buttons["undo"].setEnabled(idle and bool(self.steps))
        self.buttons["redo"].setEnabled(idle and bool(self.redo_stack))
        self.buttons["save"].setEnabled(bool(self.steps))
        self.buttons["cancel"].setEnabled(self.job is not None)
