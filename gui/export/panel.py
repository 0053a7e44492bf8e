"""Export panel: pick a model source and settings, export in the worker, read the findings,
apply a fix in one click, open the result in the graph."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.export.fixit import attach_fixes
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.result import ExportResult
from deploylens.core.export.settings import DYNAMO, TORCHSCRIPT, ExportSettings, parse_dynamic_axes
from deploylens.core.outputs import place
from deploylens.core.plugin_api import load_plugins
from deploylens.core.pytorch.huggingface import TASKS
from deploylens.core.pytorch.source import ModelSource, parse_input
from deploylens.core.support.fixes import Fix
from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.worker.client import JobFailure
from deploylens.gui.common.styles import BAD_STYLE, BOLD, IDLE_STYLE, VERDICT_STYLES
from deploylens.gui.common.wrapping import WrappingDelegate
from deploylens.gui.job_manager import JobManager

KINDS = {
    "Bundled sample": "sample",
    "torchvision model": "torchvision",
    "timm model": "timm",
    "Hugging Face folder": "hf",
    "Python file + factory": "python",
    "TorchScript .pt": "torchscript",
    "ExportedProgram .pt2": "exported_program",
}


class ExportPanel(QWidget):
    sig_exported = Signal(str)  # path of a checked, successful export
    sig_finished = Signal(object)  # the job's result
    sig_message = Signal(str)
    sig_surgery = Signal(str, list)  # an exported model, the patterns a surgery fix asks for
    sig_needs_matrix = Signal()  # the fix ladder reads the support matrix: load it if nobody has

    def __init__(self, jobs: JobManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs
        self.matrix: SupportMatrix | None = None
        self.plugins, self.plugin_errors = load_plugins()
        self.result: ExportResult | None = None
        self.surgery_after: list[str] = []  # patterns to run on the next successful export
        self.kind = QComboBox()
        self.kind.addItems(list(KINDS))
        self.target = QLineEdit("asinh")
        self.factory = QLineEdit()
        self.factory.setPlaceholderText("factory function (Python files)")
        self.inputs = QLineEdit()
        self.inputs.setPlaceholderText("x:1x3x224x224:float32:-1:1; … (or leave empty for samples)")
        self.npz = QLineEdit()
        self.npz.setPlaceholderText("or example inputs from an .npz (no pickles)")
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(self._browse)
        self.task = QComboBox()  # hf:DIR: the Optimum task ("" from the config)
        self.task.addItem("from the config", "")
        for name in TASKS:
            self.task.addItem(name, name)
        self.weights = QLineEdit()
        self.weights.setPlaceholderText(
            "torchvision/timm: a state dict (weights only; empty: random)"
        )
        self.kind.currentTextChanged.connect(self._kind_changed)
        self.trust = QCheckBox("I trust this Python file (exporting runs its code)")
        defaults = ExportSettings()
        self.exporter = QComboBox()
        self.exporter.addItems([DYNAMO, TORCHSCRIPT])
        self.exporter.setCurrentText(defaults.exporter)
        self.opset = QSpinBox()
        self.opset.setRange(0, 30)
        self.opset.setSpecialValueText("exporter default")
        self.output = QLineEdit(place(Path.cwd(), "model.onnx"))  # never into the install
        self.dynamic = QLineEdit()
        self.dynamic.setPlaceholderText("dynamic axes, e.g. x:0:batch; output:0:batch")
        self.output_names = QLineEdit()
        self.output_names.setPlaceholderText("output names, e.g. logits; boxes (empty: exporter's)")
        self.constant_folding = QCheckBox("constant folding (TorchScript)")
        self.constant_folding.setChecked(defaults.constant_folding)
        self.optimize = QCheckBox("optimize (dynamo)")
        self.optimize.setChecked(defaults.optimize)
        self.external_data = QCheckBox("weights in an external data file (dynamo)")
        self.external_data.setChecked(defaults.external_data)
        self.plugin_list = QListWidget()
        for name, plugin in sorted(self.plugins.items()):
            if not plugin.exporters:  # reference implementations only (e.g. surgery_nodes)
                continue
            item = QListWidgetItem(f"{name} — {plugin.description}")
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.plugin_list.addItem(item)
        for name, error in sorted(self.plugin_errors.items()):
            item = QListWidgetItem(f"{name} — {error}")
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.plugin_list.addItem(item)
        self.findings = QTreeWidget()
        self.findings.setHeaderLabels(["Finding / fix", "Detail"])
        # a finding is a sentence: the Detail column wraps it and its row grows to fit
        self.findings.setItemDelegate(WrappingDelegate(self.findings))
        self.findings.setColumnWidth(0, 300)
        self.findings.header().setStretchLastSection(True)
        self.findings.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.banner = QLabel("Choose a model and Export: findings and their fixes appear here.")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(IDLE_STYLE)
        self.code = QPlainTextEdit()
        self.code.setReadOnly(True)
        self.summary = QPlainTextEdit()
        self.summary.setReadOnly(True)
        self.export_button = QPushButton("Export")
        self.apply_button = QPushButton("Apply fix and re-export")
        self.apply_button.setEnabled(False)
        self._build()
        self._kind_changed()

    def _build(self) -> None:
        form = QFormLayout()
        form.addRow("Source", self.kind)
        model_row = QHBoxLayout()
        model_row.addWidget(self.target, 1)
        model_row.addWidget(self.browse)
        form.addRow("Model", model_row)
        form.addRow("Factory", self.factory)
        form.addRow("Task", self.task)
        form.addRow("Weights", self.weights)
        form.addRow("Inputs", self.inputs)
        form.addRow("Inputs (.npz)", self.npz)
        form.addRow("", self.trust)
        form.addRow("Exporter", self.exporter)
        form.addRow("Opset", self.opset)
        form.addRow("Output", self.output)
        form.addRow("Dynamic axes", self.dynamic)
        form.addRow("Output names", self.output_names)
        form.addRow("", self.constant_folding)
        form.addRow("", self.optimize)
        form.addRow("", self.external_data)
        form.addRow(QLabel("Op plugins"), self.plugin_list)
        buttons = QHBoxLayout()
        copy_cli = QPushButton("Copy CLI line")
        copy_script = QPushButton("Copy Python script")
        for button in (self.export_button, copy_cli, copy_script):
            buttons.addWidget(button)
        left = QWidget()
        column = QVBoxLayout(left)
        column.addLayout(form)
        column.addLayout(buttons)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.banner)
        right.addWidget(self.summary)
        right.addWidget(self.findings)
        right.addWidget(self.code)
        right.addWidget(self.apply_button)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(right)
        layout = QVBoxLayout(self)
        layout.addWidget(split)
        self.export_button.clicked.connect(self.export)
        copy_cli.clicked.connect(lambda: self._copy(True))
        copy_script.clicked.connect(lambda: self._copy(False))
        self.findings.currentItemChanged.connect(self._on_fix_selected)
        self.apply_button.clicked.connect(self.apply_selected_fix)

    # -- building the request ------------------------------------------------------------------
    def source(self) -> ModelSource:
        kind = KINDS[self.kind.currentText()]
        target = self.target.text().strip()
        if kind not in ("sample", "torchvision", "timm"):
            target = str(Path(target).expanduser().resolve())
        inputs = [
            parse_input(part.strip()) for part in self.inputs.text().split(";") if part.strip()
        ]
        npz = self.npz.text().strip()
        weights = self.weights.text().strip()
        return ModelSource(
            kind,
            target,
            self.factory.text().strip(),
            inputs,
            str(Path(npz).expanduser().resolve()) if npz else "",
            task=self.task.currentData() if kind == "hf" else "",
            weights=str(Path(weights).expanduser().resolve())
            if weights and kind in ("torchvision", "timm")
            else "",
        )

    def _kind_changed(self, _text: str = "") -> None:
        """Only what the chosen source takes is editable (a task for a Hugging Face folder,
        weights for a named model, a factory for a Python file)."""
        kind = KINDS[self.kind.currentText()]
        self.task.setEnabled(kind == "hf")
        self.weights.setEnabled(kind in ("torchvision", "timm"))
        self.factory.setEnabled(kind == "python")
        self.browse.setEnabled(kind not in ("sample", "torchvision", "timm"))

    def _browse(self) -> None:
        filters = {
            "python": "Python (*.py)",
            "torchscript": "TorchScript (*.pt *.pth *.ts)",
            "exported_program": "ExportedProgram (*.pt2)",
        }
        kind = KINDS[self.kind.currentText()]
        if kind == "hf":  # the folder save_pretrained wrote (config.json + *.safetensors)
            folder = QFileDialog.getExistingDirectory(self, "Hugging Face model folder")
            if folder:
                self.target.setText(folder)
            return
        if kind in filters:
            path, _ = QFileDialog.getOpenFileName(self, "Model", "", filters[kind])
            if path:
                self.target.setText(path)

    def settings(self) -> ExportSettings:
        plugins = [
            self.plugin_list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.plugin_list.count())
            if self.plugin_list.item(i).checkState() == Qt.CheckState.Checked
        ]
        axes = parse_dynamic_axes(self.dynamic.text().split(";"))
        names = [n.strip() for n in self.output_names.text().split(";") if n.strip()]
        return ExportSettings(
            dynamic_axes=axes,
            exporter=self.exporter.currentText(),
            opset=self.opset.value() or None,
            output=self.output.text(),
            output_names=names,
            constant_folding=self.constant_folding.isChecked(),
            optimize=self.optimize.isChecked(),
            external_data=self.external_data.isChecked(),
            plugins=plugins,
        )

    def request(self) -> ExportRequest:
        """The form as the request ``deploylens export`` would fill from the same settings."""
        return ExportRequest(self.source(), self.settings())

    def set_request(self, request: ExportRequest) -> None:
        """Fill the form from a request (a round trip gives the same request back)."""
        source, settings = request.source, request.settings
        self.kind.setCurrentText(next(k for k, v in KINDS.items() if v == source.kind))
        self.target.setText(source.target)
        self.factory.setText(source.factory)
        self.inputs.setText(
            "; ".join(
                f"{i.name}:{'x'.join(map(str, i.shape))}:{i.dtype}"
                + (f":{i.low!r}:{i.high!r}" if i.low is not None and i.high is not None else "")
                for i in source.inputs
            )
        )
        index = self.task.findData(source.task)
        self.task.setCurrentIndex(max(index, 0))
        self.weights.setText(source.weights)
        self.npz.setText(source.inputs_npz)
        self.exporter.setCurrentText(settings.exporter)
        self.opset.setValue(settings.opset or 0)
        self.output.setText(settings.output)
        self.dynamic.setText(
            "; ".join(
                f"{tensor}:{axis}:{label}"
                for tensor, axes in settings.dynamic_axes.items()
                for axis, label in axes.items()
            )
        )
        self.output_names.setText("; ".join(settings.output_names))
        self.constant_folding.setChecked(settings.constant_folding)
        self.optimize.setChecked(settings.optimize)
        self.external_data.setChecked(settings.external_data)
        for index in range(self.plugin_list.count()):
            item = self.plugin_list.item(index)
            if item.data(Qt.ItemDataRole.UserRole) is not None:
                checked = item.data(Qt.ItemDataRole.UserRole) in settings.plugins
                item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)

    def _copy(self, cli: bool) -> None:
        try:
            request = self.request()
        except UserError as exc:
            self.sig_message.emit(exc.message)
            return
        QGuiApplication.clipboard().setText(request.cli_line() if cli else request.python_script())

    # -- running ----------
    def export(self) -> None:
        try:
            request = self.request().prepared(trust=self.trust.isChecked())
        except UserError as exc:
            self.sig_message.emit(exc.message)
            return
        self.summary.setPlainText(f"Exporting with the {request.settings.exporter} exporter …")
        self._say(f"Exporting with the {request.settings.exporter} exporter …", IDLE_STYLE)
        self.findings.clear()
        self.export_button.setEnabled(False)
        if self.matrix is None:
            self.sig_needs_matrix.emit()
        job = self.jobs.submit_request(request, f"Export {request.source.spec()}")
        job.on_finished(self._on_result)
        job.sig_failed.connect(self._on_failed)

    def _on_failed(self, failure: JobFailure) -> None:
        self.export_button.setEnabled(True)
        self.summary.setPlainText(f"{failure.message}\n{failure.hint}".strip())
        self._say(f"Export FAILED: {failure.message}", BAD_STYLE + BOLD)
        self.sig_message.emit(failure.message)

    def _on_result(self, result: ExportResult) -> None:
        self.export_button.setEnabled(True)
        attach_fixes(result, self.matrix, self.plugins)
        self.result = result
        self.summary.setPlainText(result.summary())
        verdict = result.verdict()  # the CLI's exit status comes from the same
        self._say(verdict.word, VERDICT_STYLES[verdict.severity] + BOLD)
        self._show_findings(result)
        self.sig_finished.emit(result)
        if result.ok:
            self.sig_exported.emit(result.path)
            if self.surgery_after:
                self.sig_surgery.emit(result.path, self.surgery_after)
        self.surgery_after = []

    def set_matrix(self, matrix: SupportMatrix) -> None:
        """The support matrix arrived: a result already shown gets its full fix ladder."""
        self.matrix = matrix
        if self.result is not None and self.result.findings:
            attach_fixes(self.result, matrix, self.plugins)
            self._show_findings(self.result)

    def _show_findings(self, result: ExportResult) -> None:
        self.findings.clear()
        for finding in result.findings:
            where = " at ".join(x for x in (finding.module_path, finding.source) if x)
            top = QTreeWidgetItem([finding.operator or finding.kind, finding.message])
            top.setToolTip(0, finding.operator or finding.kind)
            top.setToolTip(1, finding.message + (f"\n{where}" if where else ""))
            self.findings.addTopLevelItem(top)
            for fix in finding.fixes:
                item = QTreeWidgetItem(top, [f"{fix.step}. {fix.title}", fix.rung])
                item.setToolTip(0, fix.title)
                item.setData(0, Qt.ItemDataRole.UserRole, fix)
            top.setExpanded(True)

    def _say(self, text: str, style: str) -> None:
        self.banner.setText(text)
        self.banner.setStyleSheet(style)

    def _on_fix_selected(self, item: QTreeWidgetItem | None) -> None:
        fix = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        self.code.setPlainText(fix.code if isinstance(fix, Fix) else "")
        self.apply_button.setEnabled(isinstance(fix, Fix) and bool(fix.settings))

    def apply_fix(self, fix: Fix) -> None:
        """One click: put the fix's settings (exporter, opset, plugins) in place and export."""
        settings = fix.settings
        if settings.exporter:
            self.exporter.setCurrentText(settings.exporter)
        if settings.opset is not None:
            self.opset.setValue(settings.opset)
        for i in range(self.plugin_list.count()):
            item = self.plugin_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) in settings.plugins:
                item.setCheckState(Qt.CheckState.Checked)
        self.surgery_after = list(settings.surgery)  # the graph-surgery rung
        self.export()

    def apply_selected_fix(self) -> None:
        item = self.findings.currentItem()
        if item is not None and item.data(0, Qt.ItemDataRole.UserRole):
            self.apply_fix(item.data(0, Qt.ItemDataRole.UserRole))
