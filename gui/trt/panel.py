"""Build panel: TensorRT settings for a target release, checked live against the model's inputs;
the exact trtexec / Polygraphy / Python script / TOML for that release and the 10 → 11 migration;
CPU calibration into a Q/DQ model (and a TensorRT cache); a real build where TensorRT exists;
and the engine view. Long work runs in the worker with progress and cancel."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.codegen import shell_lines
from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text
from deploylens.core.quantize.request import CalibrateRequest, Method
from deploylens.core.quantize.result import CalibrationReport
from deploylens.core.trt.checks import check, valid_sentence
from deploylens.core.trt.commands import migrate_to_11, polygraphy_command, trtexec_command
from deploylens.core.trt.flags import RTX, family, is_rtx, release_name
from deploylens.core.trt.request import BuildRequest
from deploylens.core.trt.result import BuildResult
from deploylens.core.trt.script import build_script
from deploylens.core.trt.settings import BuildSettings, Calibration, default_engine, load_settings
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.choices import word
from deploylens.gui.common.copy_request import CopyRequestButton
from deploylens.gui.common.opened import OpenedModel
from deploylens.gui.common.styles import BAD_STYLE, IDLE_STYLE, OK_STYLE
from deploylens.gui.job_manager import JobManager
from deploylens.gui.trt.engine_view import EngineView
from deploylens.gui.trt.settings_form import BuildSettingsForm

VERSIONS = ["10.16", "11.4", "8.6.1", "rtx"]
BUILD_GPU = "Build engine (GPU)"
BUILD_AOT = "Build (ahead of time, no GPU needed)"


def _text_box() -> QPlainTextEdit:
    """A command or script pane: never wrapped — a command is shown one option per line
    (``codegen.shell_lines``) and a path wider than the pane scrolls; wrapping cut flags in two
    (``--saveEng`` / ``ine=…``: the line breaks Unicode allows after ``-`` and ``/``)."""
    box = QPlainTextEdit()
    box.setReadOnly(True)
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    return box


class BuildPanel(QWidget):
    sig_message = Signal(str)
    sig_node_selected = Signal(str)
    sig_overlay = Signal(str, dict, str, bool)
    sig_engine_ready = Signal()  # a build finished: the Engine panel has its layers

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.model_path = ""
        self.inputs: dict[str, list[Any]] | None = None
        self.job: Any = None
        self.version = QComboBox()
        self.version.setEditable(True)
        self.version.addItems(VERSIONS)
        self.version.setToolTip("the TensorRT release the commands and checks are for")
        self.form = BuildSettingsForm()
        self.problems = QListWidget()
        self.problems.setMaximumHeight(110)
        self.problems.setWordWrap(True)  # a problem is a sentence: read whole, never cut
        self.problems.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.banner = QLabel("Open a model to check build settings.")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(IDLE_STYLE)
        self.trtexec, self.polygraphy, self.script, self.toml, self.migration = (
            _text_box() for _ in range(5)
        )
        self.engine_view = EngineView()
        self.engine_view.sig_node_selected.connect(self.sig_node_selected)
        self.engine_view.sig_overlay.connect(self.sig_overlay)
        self.engine_view.sig_message.connect(self.sig_message)
        self.calibrate_button = QPushButton("Calibrate (CPU)")
        self.calibrate_button.setToolTip(
            "ONNX Runtime static quantization → Q/DQ model + TensorRT cache"
        )
        self.calibrate_button.clicked.connect(self.calibrate)
        self.copy_calibration = CopyRequestButton(self.calibrate_request)
        self.copy_calibration.setText("Copy calibration as…")
        self.copy_calibration.sig_message.connect(self.sig_message)
        self.build_button = QPushButton(BUILD_GPU)
        self.build_button.setToolTip("with the TensorRT installed in the worker interpreter (GPU)")
        self.build_button.clicked.connect(self.build)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.load_button = QPushButton("Load…")
        self.load_button.clicked.connect(self._choose_load)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("settings as TOML, or the Python build script")
        self.save_button.clicked.connect(self._choose_save)
        self._build()
        self.form.sig_changed.connect(self.refresh)
        self.version.currentTextChanged.connect(lambda _: self.refresh())
        self.refresh()

    def _build(self) -> None:
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.form)
        top = QHBoxLayout()
        top.addWidget(QLabel("TensorRT"))
        top.addWidget(self.version)
        for button in (
            self.calibrate_button,
            self.copy_calibration,
            self.build_button,
            self.cancel_button,
            self.load_button,
            self.save_button,
        ):
            top.addWidget(button)
        top.addStretch()
        outputs = QTabWidget()
        for widget, title in (
            (self.trtexec, "trtexec"),
            (self.polygraphy, "Polygraphy"),
            (self.script, "Python script"),
            (self.toml, "TOML"),
            (self.migration, "Migrate to 11"),
        ):  # the engine view is a panel of its own (the main window docks it)
            outputs.addTab(widget, title)
        self.outputs = outputs
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(scroll)
        left_layout.addWidget(QLabel("Problems"))
        left_layout.addWidget(self.problems)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(outputs)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        self.banner.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)  # the form and the commands get the height, not the banner

    # -- model and project ------------------------------------------------------------------------
    def model_opened(self, opened: OpenedModel) -> None:
        """The panel contract (gui/common/opened.py): the model, its inputs, its [build]."""
        self.set_model(opened.path, opened.inputs, opened.table("build"))

    def set_model(
        self, path: str, inputs: dict[str, list[Any]] | None, table: dict[str, Any] | None = None
    ) -> None:
        """A newly opened model; ``table`` is the project's [build] table, if any. Without one
        the form keeps the user's choices (precision, workspace, cache …) and drops what named
        the last model's tensors and layers (profiles, per-layer types, calibration data)."""
        self.model_path, self.inputs = path, inputs
        table = table or {}
        if "request" in table:  # the request's own fields, read strictly (core/project.py)
            try:
                request = BuildRequest.from_project(table["request"], "build", model=path)
                self.version.setCurrentText(request.version)
                self.form.set_settings(request.settings)
            except UserError as exc:
                self.sig_message.emit(exc.message)
        else:
            try:
                self.form.set_settings(model_free(self.form.settings()))
            except UserError:
                pass  # a form mid-edit stays as typed: its problems list says what is wrong
        self.refresh()
        layers = table.get("layers_json")
        if layers and Path(layers).is_file():
            try:
                self.engine_view.load(layers)
            except UserError as exc:
                self.sig_message.emit(exc.message)

    def project_table(self) -> dict[str, Any]:
        """The build request through its own project table (a form mid-edit that does not read
        as settings is not saved: its problems list says why), and the engine shown."""
        table: dict[str, Any] = {}
        try:
            request = BuildRequest(
                self.model_path, settings=self.form.settings(), version=self.version.currentText()
            )
            table["request"] = request.project_table()
        except UserError:
            pass
        if self.engine_view.info is not None:
            table["layers_json"] = self.engine_view.info.path
        return table

    # -- live checks and outputs ------------------------------------------------------------------
    def refresh(self) -> None:
        """Every keystroke leaves the panel consistent: problems, banner and every command pane
        describe the form as it is now (a stale command never stays beside a new problem)."""
        version = self.version.currentText().strip()
        self._build_label(version)
        try:
            typed = release_name(version) if family(version) in (RTX, "11") else None
        except ValueError:
            typed = None
        self.form.set_typed_release(typed)
        self.problems.clear()
        try:
            settings = self.form.settings()
            family(version)
        except UserError as exc:
            self._show_problems([exc.message])
            self._blank_outputs()
            return
        except ValueError:
            from deploylens.core.trt.checks import version_problem

            self._show_problems([version_problem(version)])
            self._blank_outputs()
            return
        self.toml.setPlainText(settings.to_toml() or "# every setting at TensorRT's default\n")
        model = self.model_path or "model.onnx"
        problems = check(settings, version, self.inputs)
        migration = migrate_to_11(settings, model)
        self.migration.setPlainText("\n".join(migration.lines()))
        if problems:
            self._show_problems([str(p) for p in problems])
            for box in (self.trtexec, self.polygraphy, self.script):
                box.setPlainText(
                    "Fix the problems on the left first:\na command that silently drops a "
                    "setting\nwould build another engine."
                )
            return
        engine = default_engine(model)
        if family(version) == RTX:
            self.trtexec.setPlainText(
                "TensorRT-RTX ships no trtexec in its wheels\n(the SDK's tensorrt_rtx tool is a "
                "separate download):\nthe Python script and the Polygraphy line are its "
                "reproducers,\nand 'Build (ahead of time)' builds the plan here, with no GPU."
            )
        else:
            self.trtexec.setPlainText(
                shell_lines(trtexec_command(settings, version, model, engine))
            )
        self.polygraphy.setPlainText(
            shell_lines(polygraphy_command(settings, model, engine, version))
        )
        self.script.setPlainText(build_script(settings, version, model, engine))
        self._show_problems([])

    def _blank_outputs(self) -> None:
        for box in (self.trtexec, self.polygraphy, self.script):
            box.setPlainText("Fix the problems on the left first.")

    def _build_label(self, version: str) -> None:
        aot = is_rtx(version)
        self.build_button.setText(BUILD_AOT if aot else BUILD_GPU)
        self.build_button.setToolTip(
            "TensorRT-RTX builds a real plan ahead of time for the targets, with no GPU"
            if aot
            else "with the TensorRT installed in the worker interpreter (GPU)"
        )

    def _show_problems(self, problems: list[str]) -> None:
        self.problems.clear()
        self.problems.addItems(problems or ["No problems for this TensorRT release."])
        if not problems and self.job is None:
            version = self.version.currentText()
            try:
                sentence = valid_sentence(self.form.settings(), version)
            except (UserError, ValueError):
                sentence = f"Settings are valid for {release_name(version)}."
            self._set_banner(sentence, OK_STYLE)
        elif problems:
            self._set_banner(f"{len(problems)} problem(s): {problems[0]}", BAD_STYLE)

    def _set_banner(self, text: str, style: str) -> None:
        self.banner.setText(text)
        self.banner.setStyleSheet(style)

    # -- jobs -------------------------------------------------------------------------------------
    def calibrate_request(self) -> CalibrateRequest:
        """The calibration the form describes, as ``deploylens calibrate`` would fill it."""
        if not self.model_path:
            raise UserError("Open an ONNX model first.")
        c = self.form.settings().calibration or Calibration()
        if not c.data:
            raise UserError("Tick INT8 calibration and give a data folder.")
        version = self.version.currentText()
        # only the releases with an INT8 calibrator read TensorRT's calibration cache
        cache = self.form.cache.text().strip() if family(version) in ("8.6", "10") else ""
        return CalibrateRequest(
            model=self.model_path,
            data=c.data,
            method=word(c.method, Method),
            percentile=c.percentile or 99.99,
            preprocess=c.preprocess,
            batch_size=c.batch_size,
            batches=c.batches,
            trt_cache=cache,
            trt_version=version if cache else CalibrateRequest.trt_version,
        )

    def build_request(self) -> BuildRequest:
        if not self.model_path:
            raise UserError("Open an ONNX model first.")
        return BuildRequest(
            self.model_path, settings=self.form.settings(), version=self.version.currentText()
        )

    def calibrate(self) -> None:
        try:
            request: Any = self.calibrate_request().prepared()
        except UserError as exc:
            self._set_banner(exc.message, BAD_STYLE)
            return
        self._start(request, f"Calibrate {Path(self.model_path).name}")

    def build(self) -> None:
        try:
            request = self.build_request().prepared()
            if not self._plugins_consented(request.settings.plugins or []):
                self._set_banner(
                    "Not built: the plugin libraries were not trusted (loading one runs its "
                    "native code).",
                    BAD_STYLE,
                )
                return
        except UserError as exc:
            self._set_banner(exc.message, BAD_STYLE)
            return
        self._start(request, f"Build {Path(self.model_path).name}")

    def _plugins_consented(self, plugins: list[str]) -> bool:
        """Plugin libraries load only with the user's consent, per file content: a dialog names
        each library not yet trusted (a settings or project file may have named it)."""
        from deploylens.core.consent import check_library, grant_consent, is_trusted

        untrusted = [check_library(p) for p in plugins if not is_trusted(p)]
        if not untrusted:
            return True
        listed = "\n".join(f"  {path}" for path in untrusted)
        answer = QMessageBox.question(
            self,
            "Load plugin libraries?",
            "Building loads these TensorRT plugin libraries, which runs their native code with "
            f"your permissions:\n\n{listed}\n\nLoad them only if you trust where they came "
            "from. DeployLens remembers your answer for these exact files.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return False
        for path in untrusted:
            grant_consent(path)
        return True

    def _start(self, request: Any, title: str) -> None:
        method = request.JOB
        self.calibrate_button.setEnabled(False)
        self.build_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self._set_banner(f"{title} …", IDLE_STYLE)
        job = self.jobs.submit_request(request, title)
        self.job = job
        job.sig_progress.connect(
            lambda f, t: self._set_banner(
                f"{title} …" + (f" {f:.0%}" if isinstance(f, float) else "") + f" {t}", IDLE_STYLE
            )
        )
        job.on_finished(lambda result: self._finished(method, result))
        job.sig_failed.connect(self._failed)

    def cancel(self) -> None:
        if self.job is not None and self.job.active:
            self.job.cancel()

    def _idle(self) -> None:
        self.job = None
        self.calibrate_button.setEnabled(True)
        self.build_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def _failed(self, failure: JobFailure) -> None:
        self._idle()
        if failure.kind == "cancelled":  # the user's choice, not a failure: no red
            self._set_banner(
                "Cancelled: nothing was written (outputs appear only when a job completes).",
                IDLE_STYLE,
            )
            return
        self._set_banner(f"{failure.message}\n{failure.hint}".strip(), BAD_STYLE)
        self.sig_message.emit(failure.message)

    def _finished(self, method: str, result: CalibrationReport | BuildResult) -> None:
        self._idle()
        if isinstance(result, CalibrationReport):
            self._set_banner(result.headline(), OK_STYLE)
            return
        verdict = result.verdict()  # the CLI's exit code comes from the same
        if not result.built:
            self.problems.clear()
            self.problems.addItems(result.finding_lines())
            self._set_banner(verdict.word, BAD_STYLE)
            return
        notices = "".join(f"\nNote: {notice}" for notice in result.notices)
        self._set_banner(verdict.word + notices, OK_STYLE)
        if result.layers_json:
            self.engine_view.load(result.layers_json)
            self.sig_engine_ready.emit()

    # -- files ------------------------------------------------------------------------------------
    def _choose_load(self) -> None:
        path = QFileDialog.getOpenFileName(self, "Build settings", "", "TOML (*.toml)")[0]
        if path:
            try:
                self.form.set_settings(load_settings(path))
            except UserError as exc:
                self._set_banner(exc.message, BAD_STYLE)

    def _choose_save(self) -> None:
        path = QFileDialog.getSaveFileName(
            self, "Save", "build.toml", "TOML (*.toml);;Python (*.py)"
        )[0]
        if path:
            self.save(path)

    def save(self, path: str) -> None:
        try:
            settings = self.form.settings()
            if path.endswith(".py"):
                model = self.model_path or "model.onnx"
                engine = default_engine(model)
                text = build_script(settings, self.version.currentText(), model, engine)
            else:
                text = settings.to_toml()
            atomic_write_text(path, text)
        except (UserError, OSError) as exc:
            self._set_banner(getattr(exc, "message", str(exc)), BAD_STYLE)


def model_free(settings: BuildSettings) -> BuildSettings:
    """``settings`` without what names one model's tensors, layers or data."""
    return dataclasses.replace(
        settings, profiles=None, layer_precisions=None, layer_output_types=None, calibration=None
    )
