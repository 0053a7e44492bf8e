"""The Graph panel: canvas with minimap and legend, search, properties, overlays, breadcrumbs.

Loading (parse, IR, first layout) and big expansions run on a background thread; shapes (after
the first paint: ``shapes.py``) and initializer statistics come from the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.graph.ir import OP, GraphIR, build_ir, build_model_ir
from deploylens.core.graph.overlay import (
    Overlay,
    group_size_overlay,
    load_overlay_json,
    op_type_overlay,
    overlay_from_mapping,
)
from deploylens.core.graph.request import TensorStatsRequest
from deploylens.core.graph.result import TensorStatsResult
from deploylens.core.graph.scene import BOX_FRAME, BOX_GROUP, BOX_NODE, GraphScene
from deploylens.core.graph.search import search
from deploylens.core.model.loading import read_model
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.background import BackgroundTask
from deploylens.gui.common.qt_app import collections_paused
from deploylens.gui.graph.canvas import GraphCanvas
from deploylens.gui.graph.export import export_png, export_svg
from deploylens.gui.graph.legend import Legend
from deploylens.gui.graph.minimap import Minimap
from deploylens.gui.graph.shapes import ShapesAfterPaint

if TYPE_CHECKING:
    import onnx
from deploylens.gui.graph.properties import PropertiesView
from deploylens.gui.job_manager import JobManager

DEFAULT_DEPTH = 0  # the depth spinner of a freshly opened model (its top-level modules)
SIDE_WIDTH = 320  # minimap, legend, search results and properties
BACKGROUND_EXPAND_NODES = 3000  # expansions bigger than this lay out off the UI thread
NO_OVERLAY = "(no overlay)"


def load_graph(path: str, proto: onnx.ModelProto | None = None) -> GraphScene:
    """Build the IR of the document's parsed model (or parse it: weights stay on disk) and lay
    out the top level."""
    with collections_paused():
        model = GraphScene(build_model_ir(proto if proto is not None else read_model(path)))
        model.scene()
    return model


class GraphPanel(QWidget):
    sig_loaded = Signal(object)  # GraphScene
    sig_failed = Signal(str)
    sig_message = Signal(str)
    sig_node_selected = Signal(str)  # an ONNX node's name, when the user selects one
    sig_selection_changed = Signal()  # the node set surgery acts on (highlight or selection)

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.path: str | None = None
        self.loaded_path = ""
        self.proto: Any = None  # the parse the graph shown (or being laid out) comes from
        self.load_task: BackgroundTask | None = None  # the layout of that parse
        self.pending_overlays: list[tuple[Any, ...]] = []  # asked for while laying out
        self.menu_hooks: list[Any] = []  # callables(QMenu) adding actions (the shell sets them)
        self.stack: list[tuple[str, GraphScene]] = []
        self.overlays: dict[str, Overlay] = {}
        self.tasks: list[BackgroundTask] = []
        self.busy = False
        self.canvas = GraphCanvas()
        self.shapes = ShapesAfterPaint(jobs, self.canvas, self)  # and the open's findings
        self.minimap = Minimap(self.canvas)
        self.legend = Legend()
        self.legend.setWordWrap(True)
        self.properties = PropertiesView()
        self.results = QListWidget()
        self.search_box = QLineEdit()
        self.search_box.setPlaceholderText("Search node, op type or tensor …")
        self.search_box.returnPressed.connect(self.run_search)
        self.overlay_box = QComboBox()
        self.overlay_box.addItem(NO_OVERLAY)
        self.overlay_box.currentTextChanged.connect(self._on_overlay_chosen)
        self.depth_box = QSpinBox()
        self.depth_box.setRange(0, 32)
        self.depth_box.setPrefix("depth ")
        self.breadcrumbs = QHBoxLayout()
        self.empty = QLabel("Open an ONNX model to see its graph.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._build_layout()
        self.canvas.sig_selected.connect(self._on_selected)
        self.canvas.sig_selected.connect(lambda *_: self.sig_selection_changed.emit())
        self.canvas.sig_highlight_changed.connect(self.sig_selection_changed)
        self.canvas.sig_activated.connect(self._on_activated)
        self.canvas.sig_context.connect(self._on_context)
        self.canvas.sig_fills_changed.connect(self._show_legend)
        self.results.itemActivated.connect(self._on_result)
        self.results.itemClicked.connect(self._on_result)
        self.properties.sig_stats_requested.connect(self._request_stats)

    # -- construction ----------
    def _button(self, text: str, slot: Any) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(slot)
        return button

    def _build_layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.search_box, 2)
        bar.addWidget(QLabel("Overlay"))
        bar.addWidget(self.overlay_box, 1)
        bar.addWidget(self._button("Load overlay…", self.choose_overlay_file))
        bar.addWidget(QLabel("Expand to"))
        bar.addWidget(self.depth_box)
        bar.addWidget(self._button("Apply", lambda: self.expand_to_depth(self.depth_box.value())))
        bar.addWidget(self._button("Fit", self.canvas.fit))
        bar.addWidget(self._button("PNG…", lambda: self._choose_export("png")))
        bar.addWidget(self._button("SVG…", lambda: self._choose_export("svg")))
        lists = QSplitter(Qt.Orientation.Vertical)
        lists.addWidget(self.results)
        lists.addWidget(self.properties)
        lists.setSizes([120, 480])
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.minimap)  # beside the canvas, never over the nodes
        column.addWidget(self.legend)
        column.addWidget(lists, 1)
        self.results.setVisible(False)  # shown with the first search
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.canvas)
        split.addWidget(side)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        split.setSizes([1000, SIDE_WIDTH])
        self.split = split
        content = QWidget()
        inner = QVBoxLayout(content)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(bar)
        inner.addLayout(self.breadcrumbs)
        inner.addWidget(split, 1)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.empty)
        self.pages.addWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)

    # -- loading ----------
    def expect(self, path: str) -> None:
        """``path`` is being opened and parsed for this view: overlays asked for meanwhile (a
        validation that ends first) wait for it instead of failing. A graph of ``path`` that
        is already shown or being laid out (``prepare`` came first) is kept."""
        if path == self.path and self.proto is not None:
            return
        self.shapes.stop()  # the shapes of a model no longer shown
        if path != self.path:  # another model: the last one's search and depth go
            self.search_box.clear()
            self.results.clear()
            self.depth_box.setValue(DEFAULT_DEPTH)
        self.path = path
        self.loaded_path = ""
        self.pending_overlays = []
        self.empty.setText(f"Reading {Path(path).name} …")
        self.pages.setCurrentWidget(self.empty)

    def prepare(self, path: str, proto: onnx.ModelProto) -> None:
        """Lay ``path`` out and show it from the document's parse, made while the worker still
        checks the model: the graph does not wait for the summary (a 100k-node model's
        checker takes ~0.8 s), and ``load`` of the same parse then has nothing to do."""
        self.load(path, proto)

    def load(self, path: str, proto: onnx.ModelProto | None = None) -> BackgroundTask:
        """Show ``path``; ``proto`` is the open document's parsed model (the shell parses it
        once for every panel), read here only when none is given. The same parse shown or
        being laid out already is not laid out again."""
        if proto is not None and proto is self.proto and path == self.path and self.load_task:
            return self.load_task
        if path != self.path or self.loaded_path:
            self.proto = None
            self.expect(path)  # overlays queued since ``expect(path)`` are kept
        self.proto = proto
        self.empty.setText(f"Laying out {Path(path).name} …")
        self.pages.setCurrentWidget(self.empty)
        task = BackgroundTask(lambda: load_graph(path, proto), self)
        task.sig_done.connect(lambda model: self._on_loaded(path, model, task))
        task.sig_failed.connect(self._on_load_failed)
        self.tasks.append(task)
        self.load_task = task
        return task.start()

    def _on_loaded(self, path: str, model: GraphScene, task: BackgroundTask) -> None:
        if task is not self.load_task:
            return  # a newer load replaced this one
        self.stack = [(model.ir.title, model)]
        self._show_level(model)
        self.pages.setCurrentIndex(1)
        self.canvas.fit()
        self.loaded_path = path
        for pending in self.pending_overlays:
            self.overlay(*pending)
        self.pending_overlays = []
        self.sig_loaded.emit(model)  # first: the window brings the graph to the front
        self.shapes.follow(path, model)

    def forget(self, path: str, message: str) -> None:
        """``path`` could not be opened after all (its summary failed after both parses):
        its graph, shown or being laid out, goes, and ``message`` says why."""
        if path != self.path:
            return
        self.load_task = None  # a layout still running is not shown
        self.proto = None
        self.stack = []
        self.loaded_path = ""
        self.empty.setText(f"{Path(path).name} could not be opened:\n{message}")
        self.pages.setCurrentWidget(self.empty)

    def _on_load_failed(self, exc: BaseException, details: str) -> None:
        message = exc.message if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        self.empty.setText(f"The graph could not be shown:\n{message}")
        self.pages.setCurrentWidget(self.empty)
        self.sig_failed.emit(message)
        if self.path:
            self.shapes.follow(self.path, None)  # the open's checker findings still come

    @property
    def model(self) -> GraphScene | None:
        return self.stack[-1][1] if self.stack else None

    def _show_level(self, model: GraphScene) -> None:
        self.canvas.set_model(model)
        self.overlays = {
            "op type": op_type_overlay(model.ir),
            "node count per group": group_size_overlay(model.ir),
        }
        self._refresh_overlay_box("op type")
        self.properties.clear()
        self.results.clear()
        self._refresh_breadcrumbs()

    # -- overlays (the API later panels use) ----------
    def add_overlay(self, overlay: Overlay, show: bool = True) -> None:
        self.overlays[overlay.name] = overlay
        self._refresh_overlay_box(overlay.name if show else None)

    def overlay(
        self,
        name: str,
        values: Mapping[str, object],
        legend: str = "",
        aggregate: str = "mean",
        log_scale: bool = False,
        limit: float | None = None,
    ) -> list[str]:
        """Paint ``{node_name: number | category}`` as overlay ``name``; returns unmatched names.

        While a graph is still being laid out the overlay waits and is painted once it is shown.
        """
        if self.path and self.loaded_path != self.path:
            self.pending_overlays.append((name, values, legend, aggregate, log_scale, limit))
            return []
        if self.model is None:
            raise UserError("Open a model before adding an overlay.")
        overlay, unmatched = overlay_from_mapping(self.model.ir, name, values, legend, aggregate)
        overlay.log_scale, overlay.limit = log_scale, limit
        self.add_overlay(overlay)
        return unmatched

    def _refresh_overlay_box(self, select: str | None) -> None:
        current = select or self.overlay_box.currentText()
        self.overlay_box.blockSignals(True)
        self.overlay_box.clear()
        self.overlay_box.addItems([NO_OVERLAY, *self.overlays])
        self.overlay_box.blockSignals(False)
        self.overlay_box.setCurrentText(current)
        self._on_overlay_chosen(self.overlay_box.currentText())

    def _on_overlay_chosen(self, name: str) -> None:
        self.canvas.set_overlay(self.overlays.get(name))  # the legend follows sig_fills_changed

    def _show_legend(self) -> None:
        """The legend on the canvas's own scale, redone whenever the fills are (an expand or
        collapse changes which groups are in view and so the scale)."""
        canvas = self.canvas
        groups = canvas.scene is not None and bool((canvas.scene.box_kind == BOX_GROUP).any())
        self.legend.show_overlay(canvas.overlay, canvas.value_scale, groups)

    def load_overlay_file(self, path: str) -> list[str]:
        if self.model is None:
            raise UserError("Open a model before loading an overlay.")
        overlay, unmatched = load_overlay_json(path, self.model.ir)
        self.add_overlay(overlay)
        if unmatched:
            self.sig_message.emit(
                f"{len(unmatched)} names in {Path(path).name} match no node "
                f"(e.g. '{unmatched[0]}')."
            )
        return unmatched

    def choose_overlay_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Overlay {node_name: value}", "", "*.json")
        if path:
            try:
                self.load_overlay_file(path)
            except UserError as exc:
                self.sig_message.emit(exc.message)

    # -- expansion ----------
    def _change(self, change: Any, size: int) -> None:
        """Apply an expansion change; big ones lay out off the UI thread."""
        model = self.model
        if model is None or self.busy:
            return
        if size < BACKGROUND_EXPAND_NODES:
            change(model)
            self.canvas.refresh_scene()
            return
        self.busy = True
        self.sig_message.emit("Laying out …")

        def work() -> GraphScene:
            change(model)
            model.scene()
            return model

        task = BackgroundTask(work, self)
        task.sig_done.connect(self._after_background_change)
        task.sig_failed.connect(lambda exc, tb: self._after_background_change(None))
        self.tasks.append(task)
        task.start()

    def _after_background_change(self, model: GraphScene | None) -> None:
        self.busy = False
        self.canvas.refresh_scene()
        self.sig_message.emit("")

    def toggle_group(self, group: int) -> None:
        if self.model is not None:
            self._change(lambda m: m.toggle(group), int(self.model.group_size[group]))

    def expand_to_depth(self, depth: int) -> None:
        if self.model is not None:
            self._change(lambda m: m.expand_to_depth(depth), self.model.ir.node_count)

    def reveal(self, node: int) -> None:
        model = self.model
        if model is None:
            return
        group = model.visible_group_of(node)
        if group >= 0:
            self._change(lambda m: m.reveal(node), int(model.group_size[group]))
        if not self.busy:
            self.canvas.selected = (BOX_NODE, node)
            self.canvas.center_on_box(int(self.canvas.scene.node_box[node]), zoom_to=1.2)
            self.properties.show_node(model.ir, node, self.canvas.overlay)

    def reveal_name(self, name: str, quiet: bool = False) -> bool:
        """Select and centre the node called ``name`` (from the Validate table, the engine view
        or the timeline); False if absent (said in the status bar unless ``quiet``)."""
        model = self.model
        if model is None:
            return False
        ir = model.ir
        for node in np.flatnonzero(ir.kind == OP):
            if ir.label(int(node)) == name:
                self.reveal(int(node))
                return True
        if not quiet:
            self.sig_message.emit(f"No node named {name} in this graph.")
        return False

    def shown_graph(self) -> onnx.GraphProto | None:
        """The top-level graph on screen, as the document parsed it (None while loading or
        inside a subgraph/function)."""
        model = self.model
        if model is None or self.loaded_path != self.path or len(self.stack) != 1:
            return None
        import onnx

        proto = model.ir.proto
        return proto if isinstance(proto, onnx.GraphProto) else None

    def chosen_node_names(self) -> list[str]:
        """The ONNX node names surgery acts on: the highlighted set (Shift+drag rubber band,
        upstream/downstream) or else the selected node; top-level op nodes only."""
        model = self.model
        if model is None or len(self.stack) != 1:  # surgery edits the top-level graph
            return []
        ir = model.ir
        nodes = list(self.canvas.highlighted_nodes())
        if not nodes and self.canvas.selected and self.canvas.selected[0] == BOX_NODE:
            nodes = [self.canvas.selected[1]]
        names = []
        for node in nodes:
            proto = ir.node_proto(int(node)) if ir.kind[int(node)] == OP else None
            if proto is not None and proto.name:
                names.append(proto.name)
        return names

    # -- selection, search, context menu ----------
    def _on_selected(self, kind: int, ref: int) -> None:
        model = self.model
        if model is None or ref < 0:
            self.properties.clear()
        elif kind == BOX_NODE:
            self.properties.show_node(model.ir, ref, self.canvas.overlay)
            self.sig_node_selected.emit(model.ir.label(ref))
        else:
            self.properties.show_group(model, ref)

    def _on_activated(self, kind: int, ref: int) -> None:
        if kind in (BOX_GROUP, BOX_FRAME):
            self.toggle_group(ref)
        elif kind == BOX_NODE and self.model is not None:
            entries = self.enterable(ref)
            if entries:
                self.enter(ref, entries[0])

    def run_search(self) -> None:
        self.results.clear()
        if self.model is None:
            return
        hits = search(self.model.ir, self.search_box.text())
        self.results.setVisible(bool(hits))
        for hit in hits:
            item = QListWidgetItem(
                f"{hit.text}  ·  {hit.field}  ·  {self.model.ir.op_type(hit.node)}"
            )
            item.setData(Qt.ItemDataRole.UserRole, hit.node)
            self.results.addItem(item)
        self.sig_message.emit(f"{len(hits)} results" + (" (first 500)" if len(hits) >= 500 else ""))

    def _on_result(self, item: QListWidgetItem) -> None:
        self.reveal(int(item.data(Qt.ItemDataRole.UserRole)))

    def highlight_op(self, domain: str, op: str) -> int:
        """Highlight every node of one op type (from the Op support panel); returns the count."""
        model = self.model
        if model is None:
            return 0
        ir = model.ir
        want = ir.strings.find(op)
        dom = ir.strings.find(domain)
        if want is None or dom is None:
            self.canvas.set_highlight(None)
            return 0
        nodes = np.flatnonzero((ir.op == want) & (ir.domain == dom))
        self.canvas.set_highlight(nodes)
        return int(nodes.size)

    def highlight(self, node: int, downstream: bool) -> None:
        if self.model is not None:
            self.canvas.set_highlight(self.model.ir.reachable(node, downstream))

    def _on_context(self, kind: int, ref: int, where: QPointF) -> None:
        menu = self.context_menu(kind, ref)
        menu.popup(where.toPoint())

    def context_menu(self, kind: int, ref: int) -> QMenu:
        menu = QMenu(self)
        if kind in (BOX_GROUP, BOX_FRAME) and self.model is not None:
            label = "Collapse" if ref in self.model.expanded else "Expand"
            menu.addAction(label, lambda: self.toggle_group(ref))
        if kind == BOX_NODE:
            menu.addAction("Highlight upstream", lambda: self.highlight(ref, False))
            menu.addAction("Highlight downstream", lambda: self.highlight(ref, True))
            for entry in self.enterable(ref):
                menu.addAction(f"Enter {entry}", partial(self.enter, ref, entry))
        menu.addAction("Clear highlight", lambda: self.canvas.set_highlight(None))
        depth_menu = menu.addMenu("Expand all to depth")
        for depth in range(0, 7):
            depth_menu.addAction(str(depth), partial(self.expand_to_depth, depth))
        for hook in self.menu_hooks:  # e.g. the Surgery panel's actions, wired by the shell
            hook(menu)
        menu.addSeparator()
        menu.addAction("Export PNG…", lambda: self._choose_export("png"))
        menu.addAction("Export SVG…", lambda: self._choose_export("svg"))
        return menu

    # -- subgraphs and breadcrumbs ----------
    def enterable(self, node: int) -> list[str]:
        ir = self.model.ir if self.model else None
        if ir is None:
            return []
        names = [name for name, _ in ir.subgraphs.get(node, [])]
        function = ir.function_for(node)
        if function is not None:
            names.append(f"function {function.domain}::{function.name}")
        return names

    def enter(self, node: int, entry: str) -> None:
        ir = self.model.ir
        function = ir.function_for(node)
        if function is not None and entry.startswith("function "):
            inner: GraphIR = build_ir(function, ir.functions, title=entry)
        else:
            graph = dict(ir.subgraphs[node])[entry]
            inner = build_ir(graph, ir.functions, title=f"{ir.label(node)}.{entry}")
        model = GraphScene(inner)
        self.stack.append((inner.title, model))
        self._show_level(model)

    def go_to_level(self, index: int) -> None:
        self.stack = self.stack[: index + 1]
        self._show_level(self.stack[-1][1])

    def _refresh_breadcrumbs(self) -> None:
        while self.breadcrumbs.count():
            widget = self.breadcrumbs.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        for index, (title, _) in enumerate(self.stack):
            crumb = QToolButton()
            crumb.setText(("› " if index else "") + title)
            crumb.setAutoRaise(True)
            crumb.clicked.connect(lambda _=False, i=index: self.go_to_level(i))
            self.breadcrumbs.addWidget(crumb)
        self.breadcrumbs.addStretch(1)

    def breadcrumb_titles(self) -> list[str]:
        return [title for title, _ in self.stack]

    # -- worker jobs and export ----------
    def _request_stats(self, names: list[str]) -> None:
        if self.path is None:
            return
        job = self.jobs.submit_request(
            TensorStatsRequest(self.path, names), "Initializer statistics"
        )
        job.on_finished(self.properties.show_stats)
        job.sig_failed.connect(lambda failure: self._stats_failed(failure))

    def _stats_failed(self, failure: JobFailure) -> None:
        self.properties.show_stats(TensorStatsResult())
        self.sig_message.emit(f"Statistics failed: {failure.message}")

    def _choose_export(self, kind: str) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, f"Export {kind.upper()}", f"graph.{kind}", f"*.{kind}"
        )
        if path:
            try:
                (export_png if kind == "png" else export_svg)(self.canvas, path)
            except UserError as exc:
                self.sig_message.emit(exc.message)
