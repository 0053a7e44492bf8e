"""The main window: wires docks, menus, drag and drop and persistence; panels do the work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QResizeEvent,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QToolBar,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.file_kind import OPEN_PATTERNS
from deploylens.core.model.summary import ModelSummary
from deploylens.core.project import PROJECT_SUFFIX
from deploylens.core.samples import sample_models
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.dialogs.environment import EnvironmentDialog
from deploylens.gui.dialogs.preferences import PreferencesDialog
from deploylens.gui.graph.panel import GraphPanel
from deploylens.gui.job_manager import JobManager
from deploylens.gui.lazy_panels import FOLLOWERS, LazyPanels
from deploylens.gui.model_document import ModelDocument
from deploylens.gui.notifications import NotificationBar, Notifier
from deploylens.gui.panels.jobs_panel import JobsPanel
from deploylens.gui.panels.model_summary import ModelSummaryPanel
from deploylens.gui.panels.start_page import StartPage
from deploylens.gui.qsettings import gui_settings, recent_files, remember_recent

LAYOUT_VERSION = 3  # 2: start page, Engine dock, left column; 3: the Surgery dock
PANELS = ("Start", "Graph", "Op support", "Export", "Surgery", "Validate", "Build", "Engine",
          "Sensitivity", "Timeline")  # fmt: skip
LEFT_SHARE, LEFT_MIN, LEFT_MAX = 0.2, 260, 460  # the left column's width: 20 %, clamped
PANEL_SHARE = 0.6  # the panel in front keeps at least this share of the window
BAND_SHARE = 0.22  # a side dock moved to the top or bottom: at most this share of the height
FIRST_SHARE = 0.85  # the first start: this share of the screen (it was 1400×860 everywhere)


def first_size() -> QSize:
    """The window's size before any layout was saved: most of the screen it opens on."""
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return QSize(1400, 860)
    free = screen.availableGeometry()
    return QSize(
        min(free.width(), max(1024, int(FIRST_SHARE * free.width()))),
        min(free.height(), max(700, int(FIRST_SHARE * free.height()))),
    )


OPEN_FILTER = (
    f"Models, projects, traces, engine JSON ({' '.join(OPEN_PATTERNS)});;"
    f"ONNX models and projects (*.onnx *{PROJECT_SUFFIX});;All files (*)"
)
KEYS_HELP = (
    "Graph: wheel or +/− zooms, drag or the arrow keys pan, F or Home fits; double-click "
    "expands or collapses a group; Shift+drag chooses nodes; right-click for upstream/downstream "
    "and export.\n"
    "Timeline: W/S zoom, A/D pan, F fits, Esc clears the selection; click a kernel for its "
    "details.\n"
    "Ctrl+O opens a model, project, trace or engine JSON (also by drag and drop)."
)


STATUS_MS = 8000  # a panel's status-bar message stays this long


class MainWindow(LazyPanels, QMainWindow):
    def __init__(self, persist_layout: bool = True, document: ModelDocument | None = None) -> None:
        """``document``: one already opening (``app.open_early``), whose jobs this window takes
        over; else an empty one."""
        super().__init__()
        self.setWindowTitle("DeployLens")
        self.setObjectName("DeployLensMainWindow")
        self.resize(first_size())
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.persist_layout = persist_layout
        self._restored = False  # a saved layout was restored: keep the user's proportions
        self.front = "Start"  # the panel tab in front
        if document is None:
            document = ModelDocument(JobManager())
        self.jobs = document.manager
        self.jobs.setParent(self)
        self.document = document
        document.setParent(self)
        self.notification_bar = NotificationBar()
        self.notifier = Notifier(self.notification_bar, self)
        self.notification_bar.sig_choose_interpreter.connect(self.show_preferences)
        self.summary_panel = ModelSummaryPanel()
        self.start_page = StartPage()
        self.start_page.sig_open_path.connect(self.open_path)
        self.start_page.sig_action.connect(self._start_action)
        self.jobs_panel = JobsPanel(self.jobs)
        self.graph_panel = GraphPanel(self.jobs)
        self.graph_panel.shapes.check = True  # the open's checker findings come with its shapes
        self.graph_panel.sig_failed.connect(self.notifier.user_message)
        self.graph_panel.sig_message.connect(self.say)
        # the Surgery panel's actions in the graph's context menu (built for them if need be)
        self.graph_panel.menu_hooks.append(lambda menu: self.surgery_panel.populate_menu(menu))
        self.graph_panel.sig_loaded.connect(self._paint_surgery_diff)
        # the lazy panels built so far and what one built late catches up on (LazyPanels)
        self.panels = {}
        self.opened = self.parsed = self.link = None
        self.docks: dict[str, QDockWidget] = {}
        self.dialogs: list[QWidget] = []
        self._build_docks()
        self._build_menus()
        self.document.sig_loading.connect(self._on_loading)
        self.document.sig_opened.connect(self._on_opened)
        self.document.sig_failed.connect(self._on_open_failed)
        self.document.sig_parsed.connect(self._on_parsed)
        self.document.sig_parsed_ahead.connect(self.graph_panel.prepare)
        self.document.sig_model_failed.connect(self.graph_panel.forget)
        self.graph_panel.shapes.sig_checked.connect(self.document.add_findings)
        self.document.sig_checked.connect(self.summary_panel.show_summary)
        self.graph_panel.sig_loaded.connect(self._on_graph_shown)
        self.statusBar().showMessage("Ready — open an ONNX model (Ctrl+O) or drop one here.")
        if persist_layout:
            self._restore_layout()
        if document.model_path is not None and document.summary is None:
            self._on_loading(str(document.model_path))  # it began before this window was made

    def say(self, text: str) -> None:
        """A panel's message in the status bar, for long enough to read."""
        self.statusBar().showMessage(text, STATUS_MS)

    # -- construction ----------------------------------------------------------------------
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title.lower().replace(' ', '-').replace('/', '-')}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[title] = dock
        return dock

    def _build_docks(self) -> None:
        self.notification_toolbar = QToolBar("Notifications")
        self.notification_toolbar.setObjectName("notifications")
        self.notification_toolbar.setMovable(False)
        self.notification_toolbar.toggleViewAction().setVisible(False)
        self.notification_toolbar.addWidget(self.notification_bar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.notification_toolbar)
        self.notification_toolbar.hide()
        self.notification_bar.sig_visible.connect(self.notification_toolbar.setVisible)
        left = Qt.DockWidgetArea.LeftDockWidgetArea
        right = Qt.DockWidgetArea.RightDockWidgetArea
        # The left column (summary over jobs) runs the full height; the panels get the rest.
        self.setCorner(Qt.Corner.TopLeftCorner, left)
        self.setCorner(Qt.Corner.BottomLeftCorner, left)
        summary = self._dock("Model summary", self.summary_panel, left)
        jobs = self._dock("Jobs / Log", self.jobs_panel, left)
        self.splitDockWidget(summary, jobs, Qt.Orientation.Vertical)
        # a lazy panel's dock holds an empty widget until the panel is built
        widgets: dict[str, QWidget] = {"Start": self.start_page, "Graph": self.graph_panel}
        first = self._dock(PANELS[0], widgets[PANELS[0]], right)
        for title in PANELS[1:]:
            self.tabifyDockWidget(first, self._dock(title, widgets.get(title) or QWidget(), right))
        for title in PANELS:
            self.docks[title].visibilityChanged.connect(
                lambda visible, t=title: self._on_dock_visible(t, visible)
            )
        for dock in self.docks.values():  # a dock moved elsewhere: the panel keeps its share
            dock.dockLocationChanged.connect(lambda *_: QTimer.singleShot(0, self.keep_panel_share))
        # the registries take seconds: collected when the panel first comes to the front
        self.docks["Op support"].visibilityChanged.connect(self._support_shown)
        first.raise_()
        self._proportions_applied = False

    def apply_default_proportions(self) -> None:
        """The left column takes 20 % of the width (260–460 px) and the jobs a third of its
        height, whatever the window size: the active panel keeps most of the window (at
        1366×768 as at 3840×2160)."""
        width = int(min(LEFT_MAX, max(LEFT_MIN, LEFT_SHARE * self.width())))
        self.resizeDocks(
            [self.docks["Model summary"], self.docks["Graph"]],
            [width, max(self.width() - width, 200)],
            Qt.Orientation.Horizontal,
        )
        column = max(self.height() - 80, 200)
        self.resizeDocks(
            [self.docks["Model summary"], self.docks["Jobs / Log"]],
            [column * 2 // 3, column // 3],
            Qt.Orientation.Vertical,
        )
        self._proportions_applied = True

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._proportions_applied and not self._restored:
            QTimer.singleShot(0, self.apply_default_proportions)
        else:  # a restored layout may be one that starved the panel (it came back each start)
            QTimer.singleShot(0, self.keep_panel_share)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._proportions_applied or self._restored:
            QTimer.singleShot(0, self.keep_panel_share)  # after the docks took their new sizes

    def panel_share(self) -> float:
        """The share of the window the panel in front has (its dock's area over the window's)."""
        dock = self.docks[self.front]
        return dock.width() * dock.height() / max(self.width() * self.height(), 1)

    def keep_panel_share(self) -> None:
        """Keep the panel in front at PANEL_SHARE of the window or more: once maximized, the
        extra width went to the left column (the panel fell to 56 % at 1920, 49 % at 4K) and
        that layout came back after a restart; a dock moved to the bottom took height the same
        way. The side docks give back what they took past their share; a user's narrower
        choice stays."""
        if self.panel_share() >= PANEL_SHARE or self.isMinimized():
            return
        column = int(min(LEFT_MAX, max(LEFT_MIN, LEFT_SHARE * self.width())))
        for title in ("Model summary", "Jobs / Log"):
            dock = self.docks[title]
            if dock.isFloating() or dock.isHidden():
                continue
            area = self.dockWidgetArea(dock)
            sideways = area in (Qt.DockWidgetArea.LeftDockWidgetArea,
                                Qt.DockWidgetArea.RightDockWidgetArea)  # fmt: skip
            front = self.docks[self.front]
            if sideways and dock.width() > column:
                rest = max(self.width() - column, 200)
                self.resizeDocks([dock, front], [column, rest], Qt.Orientation.Horizontal)
            elif not sideways and dock.height() > BAND_SHARE * self.height():
                band = int(BAND_SHARE * self.height())
                rest = max(self.height() - band, 200)
                self.resizeDocks([dock, front], [band, rest], Qt.Orientation.Vertical)

    def active_panel(self) -> QDockWidget:
        """The panel tab in front (what the user works in)."""
        return self.docks[self.front]

    def _on_dock_visible(self, title: str, visible: bool) -> None:
        if visible:
            self.front = title
            self.panel(title)  # a lazy panel comes to the front: built now

    def _start_action(self, action: str) -> None:
        if action == "open":
            self.choose_and_open()
        elif action == "pytorch":
            self.docks["Export"].raise_()
        elif action == "trace":
            self.docks["Timeline"].raise_()
            self.timeline_panel.choose_trace()
        elif action == "engine":
            self.docks["Engine"].raise_()
            self.engine_view.choose_layers()

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&Open…", self.choose_and_open, QKeySequence.StandardKey.Open)
        self._action(file_menu, "Open &Trace…", lambda: self._start_action("trace"))
        self._action(file_menu, "Open &Engine Layers…", lambda: self._start_action("engine"))
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._fill_recent()
        samples = file_menu.addMenu("Open &Sample")
        for sample in sample_models():
            action = samples.addAction(sample.name)
            action.setToolTip(sample.about)
            action.triggered.connect(lambda _=False, p=sample.path: self.open_path(p))
        samples.setToolTipsVisible(True)
        self._action(
            file_menu, "&Save Project As…", self.save_project_as, QKeySequence.StandardKey.SaveAs
        )
        file_menu.addSeparator()
        self._action(
            file_menu, "&Preferences…", self.show_preferences, QKeySequence.StandardKey.Preferences
        )
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        view_menu = self.menuBar().addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Environment…", self.show_environment)
        self._action(help_menu, "&Keyboard and Mouse…", self.show_keys)
        self._action(help_menu, "Start &Page", lambda: self.docks["Start"].raise_())
        help_menu.addSeparator()
        self._action(help_menu, "&About DeployLens…", self.show_about)

    def _action(self, menu: QMenu, text: str, slot: object, shortcut: object = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)  # type: ignore[call-overload]  # a StandardKey or a str
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = recent_files()
        self.start_page.set_recent(items)
        for path in items:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(items))

    # -- actions --------------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Open whatever ``path`` is, by its content (``core.file_kind``): a model or project
        becomes the document; a trace goes to the Timeline; an engine's layer info (with the
        profile beside it) or profile goes to the Engine panel."""
        from deploylens.core.file_kind import (
            ENGINE_LAYERS,
            ENGINE_PROFILE,
            TRACE,
            file_kind,
            profile_beside,
        )

        try:
            kind = file_kind(path)
            if kind == TRACE or (kind == ENGINE_PROFILE and self.engine_view.info is None):
                self.docks["Timeline"].raise_()  # a profile alone is a timeline of its layers
                self.timeline_panel.load(str(path))
            elif kind == ENGINE_LAYERS:
                self.docks["Engine"].raise_()
                self.engine_view.load(path, profile_beside(path))
            elif kind == ENGINE_PROFILE:
                self.docks["Engine"].raise_()
                self.engine_view.load_profile(path)
            else:
                self.document.open(path)
        except UserError as exc:
            self.notifier.user_message(exc.message, exc.hint)

    def _support_shown(self, visible: bool) -> None:
        if visible:
            self.support_panel.ensure_loaded()

    def choose_and_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open model or project", "", OPEN_FILTER)
        if path:
            self.open_path(path)

    def save_project_as(self) -> None:
        if self.document.model_path is None:
            self.notifier.user_message("Open a model first; a project remembers it.")
            return
        suggested = str(self.document.model_path.with_suffix(PROJECT_SUFFIX))
        path, _ = QFileDialog.getSaveFileName(self, "Save project", suggested, f"*{PROJECT_SUFFIX}")
        if path:
            self.document.project.tables["build"] = self.build_panel.project_table()
            if "Surgery" in self.panels and self.surgery_panel.steps:
                self.document.project.tables["surgery"] = self.surgery_panel.project_table()
            try:
                saved = self.document.save_project(path)
            except UserError as exc:
                self.notifier.user_message(exc.message, exc.hint)
                return
            self.statusBar().showMessage(f"Saved {saved}", 5000)

    def show_preferences(self) -> None:
        self._keep(PreferencesDialog(self.jobs, self)).show()

    def show_keys(self) -> None:
        QMessageBox.information(self, "Keyboard and mouse", KEYS_HELP)

    def show_about(self) -> None:
        from deploylens.core import __version__

        QMessageBox.about(
            self,
            "About DeployLens",
            f"<b>DeployLens {__version__}</b><br>PyTorch → ONNX → TensorRT in one workbench: "
            "export and fix, validate, build, profile.<br>Help → Environment lists what is "
            "installed and how to get what is missing.",
        )

    def show_environment(self) -> None:
        self._keep(EnvironmentDialog(self.jobs, self)).show()

    def _keep(self, dialog: QWidget) -> QWidget:
        self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
        return dialog

    # -- document events ------------------------------------------------------------------------
    def _on_loading(self, path: str) -> None:
        self.summary_panel.show_loading(path)
        self.docks["Model summary"].raise_()
        self.statusBar().showMessage(f"Opening {path} …")

    def _on_opened(self, summary: ModelSummary) -> None:
        self.summary_panel.show_summary(summary, checking=self.document.checking)
        name = Path(summary.path).name
        self.setWindowTitle(f"{name} — DeployLens")
        self.statusBar().showMessage(
            f"{name}: {summary.node_count:,} nodes, {len(summary.inputs)} inputs, "
            f"{len(summary.outputs)} outputs",
        )
        remember_recent(summary.path)
        self.graph_panel.expect(summary.path)  # the document parses it next (sig_parsed)
        opened = OpenedModel(
            summary.path,
            {v.name: list(v.shape or []) for v in summary.inputs},
            dict(self.document.project.tables),
        )
        self.opened = opened  # a follower built later hears it then (_adopt)
        for title in FOLLOWERS:  # the panel contract's model-opened, in one loop
            if title in self.panels:
                self.panels[title].model_opened(opened)
        self._fill_recent()
        self.notification_bar.dismiss()
        if self.front == "Start":
            self.docks["Graph"].raise_()  # the start page has done its job
        if summary.problems:
            self.notifier.user_message("; ".join(summary.problems))

    def _on_graph_shown(self, _scene: object) -> None:
        """A graph laid out ahead of its summary comes to the front as the summary would have
        brought it (the start page has done its job)."""
        if self.front == "Start":
            self.docks["Graph"].raise_()

    def _on_parsed(self, path: str, proto: Any) -> None:
        """The panels that read the protobuf share the document's one parse (a ``ModelProto``;
        the signal carries ``object`` so the window imports no onnx at start)."""
        self.graph_panel.load(path, proto)
        self.parsed = (path, proto)  # a support panel built later reads it then
        if "Op support" in self.panels:
            self.support_panel.set_model(path, proto)

    def _on_open_failed(self, failure: JobFailure) -> None:
        self.summary_panel.show_error(failure.message)
        self.statusBar().showMessage("Could not open the model", 5000)
        self.notifier.failure(failure, "Open")

    # -- drag and drop, persistence -------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        local = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if local:
            self.open_path(local[0])
            event.acceptProposedAction()

    def _restore_layout(self) -> None:
        settings = gui_settings()
        geometry = settings.value("window/geometry")
        state = settings.value("window/state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            self._restored = self.restoreState(state, LAYOUT_VERSION)

    def save_layout(self) -> None:
        settings = gui_settings()
        settings.setValue("window/geometry", self.saveGeometry())
        settings.setValue("window/state", self.saveState(LAYOUT_VERSION))
        settings.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.persist_layout:
            self.save_layout()
        self.jobs.shutdown()
        super().closeEvent(event)
