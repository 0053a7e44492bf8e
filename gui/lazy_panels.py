"""The main window's panels that are built the first time anything needs them, and the one
panel contract they are wired by (a mixin of ``MainWindow``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from PySide6.QtWidgets import QDockWidget, QWidget

from deploylens.gui.common.opened import HearsModelOpened, OpenedModel

if TYPE_CHECKING:  # built when first needed (LazyPanels.panel): their modules load then
    from deploylens.gui.export.panel import ExportPanel
    from deploylens.gui.graph.panel import GraphPanel
    from deploylens.gui.graph_link import GraphLink
    from deploylens.gui.job_manager import JobManager
    from deploylens.gui.model_document import ModelDocument
    from deploylens.gui.sensitivity.panel import SensitivityPanel
    from deploylens.gui.support.panel import OpSupportPanel
    from deploylens.gui.surgery.panel import SurgeryPanel
    from deploylens.gui.timeline.panel import TimelinePanel
    from deploylens.gui.trt.engine_view import EngineView
    from deploylens.gui.trt.panel import BuildPanel
    from deploylens.gui.validate.panel import ValidatePanel

# The panels behind the Start page and the graph are built the first time anything needs them
# (their dock shown, a signal, a menu, a file they open): at start their modules cost ~0.12 s
# of CPU (2026-12-02), a tenth of opening a 100k-node model. Dock title -> its builder.
LAZY_PANELS = {
    "Op support": "_make_support", "Export": "_make_export", "Surgery": "_make_surgery",
    "Validate": "_make_validate", "Build": "_make_build", "Engine": "_make_build",
    "Sensitivity": "_make_sensitivity", "Timeline": "_make_timeline",
}  # fmt: skip
# The panels that follow the open model (the panel contract's model-opened), in the order told.
FOLLOWERS = ("Validate", "Timeline", "Sensitivity", "Surgery", "Build")

T = TypeVar("T")


class PanelOf(Generic[T]):
    """``window.<name>_panel``: the panel of dock ``title``, built on first use."""

    def __init__(self, title: str) -> None:
        self.title = title

    @overload
    def __get__(self, window: None, owner: type) -> PanelOf[T]: ...
    @overload
    def __get__(self, window: LazyPanels, owner: type) -> T: ...
    def __get__(self, window: LazyPanels | None, owner: type) -> PanelOf[T] | T:
        if window is None:
            return self
        return cast(T, window.panel(self.title))


class LazyPanels:
    """The lazy panels of ``MainWindow``: a property per panel builds it on first use (its dock
    holds an empty widget until then) and wires it; what a panel built late needs from before
    is kept here (the open model, the document's parse); the support matrix is the support
    panel's."""

    # the window's own, set before any panel is built
    jobs: JobManager
    document: ModelDocument
    graph_panel: GraphPanel
    docks: dict[str, QDockWidget]
    panels: dict[str, Any]  # the lazy panels built so far, by dock title
    opened: OpenedModel | None
    parsed: tuple[str, Any] | None
    link: GraphLink | None

    def say(self, text: str) -> None:
        """A panel's message in the window's status bar (``MainWindow.say``)."""
        raise NotImplementedError

    def open_path(self, path: str) -> None:
        """Open a file as the window does (``MainWindow.open_path``)."""
        raise NotImplementedError

    support_panel: PanelOf[OpSupportPanel] = PanelOf("Op support")
    export_panel: PanelOf[ExportPanel] = PanelOf("Export")
    surgery_panel: PanelOf[SurgeryPanel] = PanelOf("Surgery")
    validate_panel: PanelOf[ValidatePanel] = PanelOf("Validate")
    build_panel: PanelOf[BuildPanel] = PanelOf("Build")
    engine_view: PanelOf[EngineView] = PanelOf("Engine")
    sensitivity_panel: PanelOf[SensitivityPanel] = PanelOf("Sensitivity")
    timeline_panel: PanelOf[TimelinePanel] = PanelOf("Timeline")

    @property
    def model_views(self) -> tuple[HearsModelOpened, ...]:
        """The panels that follow the open model (built, to be told)."""
        return tuple(self.panel(title) for title in FOLLOWERS)

    def panel(self, title: str) -> Any:
        """The panel of dock ``title``, built the first time anything asks (``LAZY_PANELS``)."""
        if title not in LAZY_PANELS:
            return self.docks[title].widget()
        if title not in self.panels:
            getattr(self, LAZY_PANELS[title])()
        return self.panels[title]

    def all_panels(self) -> dict[str, Any]:
        """Every dock's panel, by title, the lazy ones built now."""
        return {title: self.panel(title) for title in self.docks}

    def _place(self, title: str, widget: QWidget) -> None:
        """``widget`` is the panel of dock ``title`` from now on: registered first, so that
        nothing its wiring sets off builds it a second time, then put in its dock."""
        self.panels[title] = widget
        dock = self.docks[title]
        placeholder = dock.widget()
        dock.setWidget(widget)
        if placeholder is not None:
            placeholder.deleteLater()

    def _adopt(self, title: str, panel: Any, pointing: bool = True) -> None:
        """The shared contract, for every panel the same (issue 46): what it says goes to the
        status bar, a node it names (``pointing``) is revealed in the graph, and a follower
        hears the open model — a panel built after the open catches up on it."""
        self._place(title, panel)
        panel.sig_message.connect(self.say)
        if pointing:
            panel.sig_node_selected.connect(self.graph_panel.reveal_name)
        if title in FOLLOWERS and self.opened is not None:
            panel.model_opened(self.opened)

    def _make_support(self) -> None:
        from deploylens.gui.support.panel import OpSupportPanel

        panel = OpSupportPanel(self.jobs)
        self._adopt("Op support", panel, pointing=False)
        panel.sig_op_selected.connect(self.graph_panel.highlight_op)
        panel.sig_overlay.connect(self.graph_panel.overlay)
        panel.sig_ready.connect(self._share_matrix)
        if self.parsed is not None:
            panel.set_model(*self.parsed)

    def _make_export(self) -> None:
        from deploylens.gui.export.panel import ExportPanel

        panel = ExportPanel(self.jobs)
        self._adopt("Export", panel, pointing=False)
        panel.sig_needs_matrix.connect(lambda: self.support_panel.ensure_loaded())
        panel.sig_exported.connect(self.open_path)
        panel.sig_surgery.connect(self._export_surgery)
        if "Op support" in self.panels and self.support_panel.matrix is not None:
            panel.set_matrix(self.support_panel.matrix)  # loaded before this panel was built

    def _make_surgery(self) -> None:
        from deploylens.gui.surgery.panel import SurgeryPanel

        panel = SurgeryPanel(self.jobs)
        panel.selection_source = self.graph_panel.chosen_node_names
        panel.graph_source = self.graph_panel.shown_graph
        self._adopt("Surgery", panel)
        self.graph_panel.sig_selection_changed.connect(panel.refresh_chosen)
        panel.sig_open_model.connect(self.open_path)
        panel.refresh_chosen()  # nodes chosen before the panel was built

    def _make_validate(self) -> None:
        from deploylens.gui.validate.panel import ValidatePanel

        panel = ValidatePanel(self.jobs)
        self._adopt("Validate", panel)
        panel.sig_overlay.connect(
            lambda name, values, limit: self.graph_panel.overlay(
                name,
                values,
                "rel L2 error vs reference (groups: max)",
                "max",
                log_scale=True,
                limit=limit,
            )
        )
        panel.sig_result.connect(self._remember_validation)

    def _make_build(self) -> None:
        """The Build panel and the Engine view it owns (two docks)."""
        from deploylens.gui.trt.panel import BuildPanel

        panel = BuildPanel(self.jobs)
        self._place("Engine", panel.engine_view)
        self._adopt("Build", panel)
        panel.sig_overlay.connect(self._engine_overlay)
        panel.sig_engine_ready.connect(lambda: self.docks["Engine"].raise_())

    def _make_sensitivity(self) -> None:
        from deploylens.gui.sensitivity.panel import SensitivityPanel

        panel = SensitivityPanel(self.jobs)
        self._adopt("Sensitivity", panel)
        panel.sig_overlay.connect(
            lambda name, values, legend: self.graph_panel.overlay(name, values, legend, "max")
        )

    def _make_timeline(self) -> None:
        from deploylens.gui.graph_link import GraphLink
        from deploylens.gui.timeline.panel import TimelinePanel

        panel = TimelinePanel(self.jobs)
        self._adopt("Timeline", panel, pointing=False)
        self.link = GraphLink(self.graph_panel, panel, self.say)
        panel.sig_nodes.connect(self.link.timeline_to_graph)
        panel.sig_overlay.connect(self.link.overlay)
        self.graph_panel.sig_node_selected.connect(self.link.graph_to_timeline)

    # -- what the panels ask of each other, through the window ---------------------------------
    def _share_matrix(self, matrix: Any) -> None:
        """The export panel's fix ladder uses the support matrix once it is loaded (the
        signal carries ``object``: the matrix is imported only when the panel loads it)."""
        if "Export" in self.panels:
            self.export_panel.set_matrix(matrix)

    def _engine_overlay(self, name: str, values: dict, legend: str, log_scale: bool) -> None:
        """Engine latency (summed over collapsed groups) or precision (their most common one)."""
        if self.graph_panel.path is None:
            return  # an engine opened without its model: the table still works
        unmatched = self.graph_panel.overlay(
            name, values, legend, "sum" if log_scale else "mode", log_scale=log_scale
        )
        if unmatched and len(unmatched) == len(values):
            self.say(f"{name}: no layer maps to a node of this model")

    def _export_surgery(self, path: str, patterns: list) -> None:
        """The fix ladder's surgery rung: the export succeeded, now the graph edit, in view."""
        self.surgery_panel.start_on(path, patterns)
        self.docks["Surgery"].raise_()

    def _paint_surgery_diff(self, _scene: object) -> None:
        """The edited model is in the graph: paint what the surgery added or changed."""
        if "Surgery" not in self.panels:
            return  # no surgery was made: nothing to paint
        from deploylens.gui.surgery.panel import DIFF_OVERLAY

        values = self.surgery_panel.diff_overlay()
        if values and self.graph_panel.path == self.surgery_panel.current:
            self.graph_panel.overlay(DIFF_OVERLAY, values, "surgery vs the original", "mode")

    def _remember_validation(self, _result: object) -> None:
        """The project keeps the validate settings and where the last result was saved."""
        self.document.project.tables["validate"] = self.validate_panel.project_table()
