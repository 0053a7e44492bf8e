"""The build settings as a form — a view over ``core.trt.settings.BuildSettings``: it reads
and writes that dataclass and owns no state the CLI also needs. Empty fields mean "TensorRT's
default", as in the model."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from deploylens.core.errors import UserError
from deploylens.core.trt.profiles import parse_profiles, profiles_text
from deploylens.core.trt.settings import PRECISIONS, BuildSettings, Calibration

DEFAULT = "(default)"


def _combo(items: list[str]) -> QComboBox:
    box = QComboBox()
    box.addItems([DEFAULT, *items])
    return box


def _spin(low: int, high: int, suffix: str = "") -> QSpinBox:
    box = QSpinBox()
    box.setRange(low - 1, high)
    box.setSpecialValueText(DEFAULT)  # the lowest value shows as "(default)" and means None
    box.setValue(low - 1)
    box.setSuffix(suffix)
    return box


def _pairs(text: str) -> dict[str, str] | None:
    """``"a:fp16; /head/*:fp32"`` → ``{"a": "fp16", "/head/*": "fp32"}`` (the name may hold ':')."""
    result = {}
    for item in filter(None, (p.strip() for p in text.replace("\n", ";").split(";"))):
        name, sep, value = item.rpartition(":")
        if not sep or not name:
            raise UserError(f"'{item}': write LAYER_OR_PATTERN:PRECISION (e.g. /head/*:fp32).")
        result[name.strip()] = value.strip()
    return result or None


class BuildSettingsForm(QWidget):
    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.precision = {p: QCheckBox(p.upper()) for p in PRECISIONS}
        self.precision["tf32"].setChecked(True)
        self.precision["tf32"].setToolTip("TF32 is on by default; untick for --noTF32")
        self.strongly_typed = QCheckBox("Strongly typed (types come from the model)")
        self.constraints = _combo(["prefer", "obey", "none"])
        self.layer_precisions = QLineEdit()
        self.layer_precisions.setPlaceholderText("/head/*:fp32; /backbone/conv1/Conv:fp16")
        self.layer_output_types = QLineEdit()
        self.layer_output_types.setPlaceholderText("LAYER_OR_PATTERN:fp16; …")
        self.workspace = _spin(1, 1 << 20, " MB")
        self.tactic_memory = _spin(1, 1 << 20, " MB")
        self.level = _combo([str(n) for n in range(6)])
        self.profiles = QPlainTextEdit()
        self.profiles.setPlaceholderText(
            "x: 1x3x224x224 / 8x3x224x224 / 32x3x224x224\n---\n(next profile)"
        )
        self.profiles.setMaximumHeight(80)
        self.timing_cache = QLineEdit()
        self.timing_cache.setPlaceholderText("timing.cache (read before, written after the build)")
        self.tactic_sources = QLineEdit()
        self.tactic_sources.setPlaceholderText("-CUDNN, +CUBLAS_LT")
        self.sparsity = _combo(["disable", "enable", "force"])
        self.dla_core = _spin(0, 15)
        self.gpu_fallback = QCheckBox("GPU fallback")
        self.hardware = _combo(["none", "ampere+", "sameComputeCapability"])
        self.targets = QLineEdit()
        self.targets.setPlaceholderText("TensorRT-RTX: sm89, sm120 (empty: its default set)")
        self.targets.setToolTip(
            "TensorRT-RTX builds ahead of time for these compute capabilities, with no GPU "
            "(sm75, sm80, sm86, sm89, sm120, sm121), or 'current' for the GPU building it"
        )
        self.version_compatible = QCheckBox("Version compatible")
        self.aux_streams = _spin(0, 64)
        self.verbosity = QComboBox()
        self.verbosity.addItems(["detailed", "layer_names_only", "none", DEFAULT])
        self.refit = QCheckBox("Refittable")
        self.strip_weights = QCheckBox("Strip weights")
        self.plugins = QLineEdit()
        self.plugins.setPlaceholderText("plugin libraries (.so), separated by ;")
        self.calibrate = QGroupBox(
            "INT8 calibration (≤10: calibrator or cache; 11: calibrate → Q/DQ model)"
        )
        self.calibrate.setCheckable(True)
        self.calibrate.setChecked(False)
        self.method = QComboBox()
        self.method.addItems(["entropy", "minmax", "percentile"])
        self.percentile = QLineEdit("99.99")
        self.data = QLineEdit()
        self.data.setPlaceholderText("folder of images or .npy/.npz")
        self.preprocess = QLineEdit()
        self.preprocess.setPlaceholderText("imagenet, or resize=256,crop=224,…")
        self.batch_size = _spin(1, 4096)
        self.batches = _spin(1, 1 << 20)
        self.cache = QLineEdit()
        self.cache.setPlaceholderText("calibration.cache")
        self._build()
        for widget in self.findChildren(QWidget):
            for signal in ("toggled", "textChanged", "currentTextChanged", "valueChanged"):
                if hasattr(widget, signal):
                    getattr(widget, signal).connect(lambda *_: self.sig_changed.emit())

    def _build(self) -> None:
        precision = QHBoxLayout()
        for box in self.precision.values():
            precision.addWidget(box)
        precision.addStretch()
        form = QFormLayout()
        form.addRow("Precision", precision)
        form.addRow("", self.strongly_typed)
        form.addRow("Constraints", self.constraints)
        form.addRow("Layer precisions", self.layer_precisions)
        form.addRow("Layer output types", self.layer_output_types)
        form.addRow("Workspace", self.workspace)
        form.addRow("Tactic shared memory", self.tactic_memory)
        form.addRow("Optimization level", self.level)
        form.addRow("Profiles", self.profiles)
        form.addRow("Timing cache", self.timing_cache)
        form.addRow("Tactic sources", self.tactic_sources)
        form.addRow("Sparsity", self.sparsity)
        dla = QHBoxLayout()
        dla.addWidget(self.dla_core)
        dla.addWidget(self.gpu_fallback)
        form.addRow("DLA core", dla)
        form.addRow("Hardware compatibility", self.hardware)
        form.addRow("AOT targets", self.targets)
        form.addRow("", self.version_compatible)
        form.addRow("Max aux streams", self.aux_streams)
        form.addRow("Profiling verbosity", self.verbosity)
        flags = QHBoxLayout()
        flags.addWidget(self.refit)
        flags.addWidget(self.strip_weights)
        form.addRow("", flags)
        form.addRow("Plugins", self.plugins)
        calibration = QFormLayout(self.calibrate)
        calibration.addRow("Method", self.method)
        calibration.addRow("Percentile", self.percentile)
        calibration.addRow("Data", self.data)
        calibration.addRow("Preprocess", self.preprocess)
        calibration.addRow("Batch size", self.batch_size)
        calibration.addRow("Batches", self.batches)
        calibration.addRow("Cache", self.cache)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.calibrate)

    def set_typed_release(self, product: str | None) -> None:
        """Under a strongly typed release (``product``: "TensorRT-RTX", "TensorRT 11") precision
        flags do not exist: an unticked FP16/INT8/BF16/FP8 box cannot be ticked (a ticked one stays
        enabled so it can be unticked, its problem listed), TF32 stays the one real switch."""
        why = (
            f"{product} is strongly typed: each layer runs in its type in the model "
            "(convert to FP16 or calibrate into Q/DQ instead)"
            if product
            else ""
        )
        for name, box in self.precision.items():
            if name == "tf32":
                continue
            box.setEnabled(not product or box.isChecked())
            box.setToolTip(why)
        self.strongly_typed.setEnabled(not product)
        self.strongly_typed.setToolTip(f"{product} is always strongly typed" if product else "")

    # -- model ↔ view ----------------------------------------------------------------------------
    def settings(self) -> BuildSettings:
        """The form as settings (raises ``UserError`` for text it cannot read)."""

        def number(box: QSpinBox) -> int | None:
            return None if box.value() < box.minimum() + 1 else box.value()

        def text(box: QComboBox) -> str | None:
            return None if box.currentText() == DEFAULT else box.currentText()

        chosen = [p for p, box in self.precision.items() if box.isChecked() and p != "tf32"]
        calibration = None
        if self.calibrate.isChecked():
            try:
                percentile = (
                    float(self.percentile.text())
                    if self.method.currentText() == "percentile"
                    else None
                )
            except ValueError:
                raise UserError(f"'{self.percentile.text()}' is not a percentile.") from None
            calibration = Calibration(
                self.method.currentText(),
                percentile,
                self.data.text().strip(),
                self.preprocess.text().strip(),
                number(self.batch_size),
                number(self.batches),
                self.cache.text().strip(),
            )
        level = text(self.level)
        return BuildSettings(
            precisions=chosen or None,
            no_tf32=True if not self.precision["tf32"].isChecked() else None,
            strongly_typed=self.strongly_typed.isChecked() or None,
            precision_constraints=text(self.constraints),
            layer_precisions=_pairs(self.layer_precisions.text()),
            layer_output_types=_pairs(self.layer_output_types.text()),
            workspace_mb=number(self.workspace),
            tactic_dram_mb=number(self.tactic_memory),
            optimization_level=int(level) if level is not None else None,
            profiles=parse_profiles(self.profiles.toPlainText()),
            timing_cache=self.timing_cache.text().strip() or None,
            tactic_sources=[t.strip() for t in self.tactic_sources.text().split(",") if t.strip()]
            or None,
            sparsity=text(self.sparsity),
            dla_core=number(self.dla_core),
            gpu_fallback=self.gpu_fallback.isChecked() or None,
            hardware_compatibility=text(self.hardware),
            compute_capabilities=[
                t.strip().lower()
                for t in self.targets.text().replace(";", ",").split(",")
                if t.strip()
            ]
            or None,
            version_compatible=self.version_compatible.isChecked() or None,
            max_aux_streams=number(self.aux_streams),
            profiling_verbosity=text(self.verbosity),
            refit=self.refit.isChecked() or None,
            strip_weights=self.strip_weights.isChecked() or None,
            calibration=calibration,
            plugins=[p.strip() for p in self.plugins.text().split(";") if p.strip()] or None,
        )

    def set_settings(self, s: BuildSettings) -> None:
        self.blockSignals(True)
        for p, box in self.precision.items():
            box.setChecked(p in (s.precisions or []) or (p == "tf32" and not s.no_tf32))
        self.strongly_typed.setChecked(bool(s.strongly_typed))
        self.constraints.setCurrentText(s.precision_constraints or DEFAULT)
        self.layer_precisions.setText(
            "; ".join(f"{k}:{v}" for k, v in (s.layer_precisions or {}).items())
        )
        self.layer_output_types.setText(
            "; ".join(f"{k}:{v}" for k, v in (s.layer_output_types or {}).items())
        )
        spin_boxes: tuple[tuple[QSpinBox, int | None], ...] = (
            (self.workspace, s.workspace_mb),
            (self.tactic_memory, s.tactic_dram_mb),
            (self.dla_core, s.dla_core),
            (self.aux_streams, s.max_aux_streams),
        )
        for spin, value in spin_boxes:
            spin.setValue(spin.minimum() if value is None else value)
        self.level.setCurrentText(
            DEFAULT if s.optimization_level is None else str(s.optimization_level)
        )
        self.profiles.setPlainText(profiles_text(s.profiles))
        self.timing_cache.setText(s.timing_cache or "")
        self.tactic_sources.setText(", ".join(s.tactic_sources or []))
        self.sparsity.setCurrentText(s.sparsity or DEFAULT)
        self.gpu_fallback.setChecked(bool(s.gpu_fallback))
        self.hardware.setCurrentText(s.hardware_compatibility or DEFAULT)
        self.targets.setText(", ".join(s.compute_capabilities or []))
        self.version_compatible.setChecked(bool(s.version_compatible))
        self.verbosity.setCurrentText(s.profiling_verbosity or DEFAULT)
        self.refit.setChecked(bool(s.refit))
        self.strip_weights.setChecked(bool(s.strip_weights))
        self.plugins.setText("; ".join(s.plugins or []))
        c = s.calibration
        self.calibrate.setChecked(c is not None)
        if c is not None:
            self.method.setCurrentText(c.method)
            self.percentile.setText(str(c.percentile or 99.99))
            self.data.setText(c.data)
            self.preprocess.setText(c.preprocess)
            self.batch_size.setValue(c.batch_size or self.batch_size.minimum())
            self.batches.setValue(c.batches or self.batches.minimum())
            self.cache.setText(c.cache)
        self.blockSignals(False)
        self.sig_changed.emit()
