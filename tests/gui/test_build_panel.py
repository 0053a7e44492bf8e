"""The Build panel with real widgets and the real worker: live checks per TensorRT release,
commands that follow the release, CPU calibration, the build's clear message where TensorRT is
missing (always in CI), the engine view on real TREx files, and the project round trip."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import numpy as np
from PIL import Image
from PySide6.QtCore import Qt

from deploylens.core.quantize.trt_cache import read_cache
from deploylens.core.trt.commands import trtexec_command
from deploylens.core.trt.settings import default_engine
from deploylens.gui.trt.engine_view import COLUMNS
from tests.gui.conftest import JOB_TIMEOUT_MS, wait_opened

COLUMN = {name: index for index, name in enumerate(COLUMNS)}


def test_live_checks_commands_and_project(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.build_panel
    form = panel.form
    assert panel.problems.item(0).text() == "No problems for this TensorRT release."
    panel.version.setCurrentText("10.16")
    form.precision["fp16"].setChecked(True)
    form.workspace.setValue(512)
    assert "--fp16" in panel.trtexec.toPlainText()
    assert "--memPoolSize=workspace:512M" in panel.trtexec.toPlainText()
    assert "config.set_flag(trt.BuilderFlag.FP16)" in panel.script.toPlainText()
    assert "precisions = [" in panel.toml.toPlainText()
    panel.version.setCurrentText("11.4")  # the same recipe is impossible in 11
    assert "TensorRT 11 has no precision flags" in panel.problems.item(0).text()
    assert "Fix the problems" in panel.trtexec.toPlainText()
    assert "strongly typed" in panel.migration.toPlainText()
    panel.version.setCurrentText("10.16")
    form.profiles.setPlainText("image: 1x3x32x32 / 4x3x32x32 / 8x3x32x32")  # batch is fixed at 1
    assert "axis 0 is fixed at 1" in panel.problems.item(0).text()
    form.profiles.setPlainText("image: 1x3x32")
    assert "INPUT: MIN / OPT / MAX" in panel.problems.item(0).text()
    form.profiles.setPlainText("")
    panel.save(str(tmp_path / "build.toml"))
    assert 'precisions = [\n    "fp16",\n]' in (tmp_path / "build.toml").read_text()
    project = window.document.project
    project.tables["build"] = panel.project_table()
    saved = window.document.save_project(tmp_path / "p.deploylens.toml")
    second = make_window()
    wait_opened(qtbot, second, saved)
    again = second.build_panel
    assert again.form.precision["fp16"].isChecked() and again.form.workspace.value() == 512
    assert (
        again.version.currentText() == "10.16"
        and again.trtexec.toPlainText() == panel.trtexec.toPlainText()
    )


def test_a_strongly_typed_release_says_what_a_ticked_tf32_means(
    qtbot, make_window, samples: Path
) -> None:
    """TF32 ticked with TensorRT-RTX read only "Settings are valid": the banner now says the
    release is strongly typed and what TF32 still does there, and precision boxes that have no
    flag in that release cannot be ticked."""
    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel, form = window.build_panel, window.build_panel.form
    panel.version.setCurrentText("rtx")
    assert form.precision["tf32"].isChecked() and form.precision["tf32"].isEnabled()
    banner = panel.banner.text()
    assert banner.startswith("Settings are valid for TensorRT-RTX, which is strongly typed")
    assert "FP32 layers may use TF32 math" in banner
    assert not form.precision["fp16"].isEnabled() and not form.strongly_typed.isEnabled()
    form.precision["tf32"].setChecked(False)
    assert "TF32 off: FP32 layers run in strict FP32" in panel.banner.text()
    panel.version.setCurrentText("10.16")  # flags exist again
    assert form.precision["fp16"].isEnabled() and form.strongly_typed.isEnabled()
    assert panel.banner.text() == "Settings are valid for TensorRT 10.16."


def test_a_cancelled_build_is_not_shown_as_a_failure(qtbot, make_window, samples: Path) -> None:
    """The worker answers a cancel with the "cancelled" kind (tests/core/test_tensorrt_rtx.py
    cancels a real build); the panel shows it as the user's choice, not in the failure style."""
    from deploylens.core.worker.client import JobFailure
    from deploylens.gui.common.styles import BAD_STYLE

    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.build_panel
    panel._failed(JobFailure("cancelled", "cancelled"))
    assert panel.banner.text().startswith("Cancelled: nothing was written")
    assert panel.banner.styleSheet() != BAD_STYLE and panel.build_button.isEnabled()
    panel._failed(JobFailure("user_error", "the model is gone"))
    assert panel.banner.styleSheet() == BAD_STYLE


def test_calibrate_in_the_worker_and_build_without_tensorrt(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    model = tmp_path / "small_cnn.onnx"
    model.write_bytes((samples / "small_cnn.dynamo.onnx").read_bytes())
    images = tmp_path / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (36, 36, 3), dtype=np.uint8)).save(images / f"{i}.png")
    window = make_window()
    wait_opened(qtbot, window, model)
    panel = window.build_panel
    panel.version.setCurrentText("10.16")
    form = panel.form
    form.calibrate.setChecked(True)
    form.method.setCurrentText("minmax")
    form.data.setText(str(images))
    form.preprocess.setText("resize=32x32,scale=1/255")
    form.cache.setText(str(tmp_path / "calib.cache"))
    form.precision["int8"].setChecked(True)
    assert "--int8" in panel.trtexec.toPlainText() and "--calib=" in panel.trtexec.toPlainText()
    panel.calibrate_button.click()
    qtbot.waitUntil(lambda: panel.banner.text().startswith("Calibrated"), timeout=JOB_TIMEOUT_MS)
    assert (
        "top-1 agreement" in panel.banner.text()
        and "TRT-101600-MinMaxCalibration" in panel.banner.text()
    )
    assert (tmp_path / "small_cnn.minmax.qdq.onnx").is_file()
    assert "image" in read_cache(tmp_path / "calib.cache").scales
    panel.build_button.click()  # no TensorRT in this interpreter: say so, keep the GUI alive
    qtbot.waitUntil(lambda: panel.build_button.isEnabled(), timeout=JOB_TIMEOUT_MS)
    assert "'tensorrt' is not installed" in panel.banner.text()
    assert "pip install tensorrt" in panel.banner.text()


def test_engine_view_on_real_trex_files(qtbot, make_window, artifacts: Path) -> None:
    root = next(artifacts.rglob("fp16/resnet.onnx.engine.graph.json")).parent.parent
    window = make_window()
    view = window.engine_view
    assert window.docks["Engine"].widget() is view  # a panel of its own, not a hidden tab
    overlays: list[str] = []
    view.sig_overlay.connect(lambda name, values, legend, log: overlays.append(name))
    view.load(
        root / "fp16/resnet.onnx.engine.graph.json", root / "fp16/resnet.onnx.engine.profile.json"
    )
    assert view.table.rowCount() == len(view.info.layers) > 10
    assert overlays == ["TensorRT latency (ms)", "TensorRT precision"]
    # engine order first (TensorRT's run order), not reverse-alphabetical
    assert [view.table.item(r, 0).text() for r in range(3)] == ["1", "2", "3"]
    assert view.table.item(0, 1).text() == view.info.layers[0].name
    # the summary a TREx user reads first: total, by type, by precision, reformats, slowest
    total = sum(r.time_ms or 0 for r in view.rows)
    text = view.summary.text()
    assert f"{total:.3f} ms" in text and "By layer type" in text and "By precision" in text
    assert "reformat layers" in text and "Slowest layers" in text
    # the page agrees with itself: the header's reformat count is the table's Reformat row, and
    # the type rows cover every layer (the fp16 ResNet has 10 NoOp copy nodes and 2 reformats)
    import re

    header = re.search(r"(\d+) reformat layers", text)
    reformat_row = re.search(r"<td>Reformat</td><td align='right'>&nbsp;(\d+) ·", text)
    assert header and reformat_row and int(header[1]) == int(reformat_row[1]) == 2
    type_block = text.split("By layer type")[1].split("By precision")[0]
    counts = [int(n) for n in re.findall(r"&nbsp;(\d+) ·", type_block)]
    assert sum(counts) == len(view.info.layers)
    ms = COLUMN["ms"]
    view.table.sortItems(ms, Qt.SortOrder.DescendingOrder)
    slowest = float(view.table.item(0, ms).text())
    assert slowest == round(max(r.time_ms or 0 for r in view.rows), 3)
    nodes = COLUMN["ONNX nodes"]
    row = next(r for r in range(view.table.rowCount()) if view.table.item(r, nodes).text())
    with qtbot.waitSignal(view.sig_node_selected) as selected:
        view.table.cellClicked.emit(row, 0)
    assert selected.args[0] in view.table.item(row, nodes).text()
    diff = view.diff_with(root / "qat/resnet-qat.onnx.engine.graph.json")
    assert any("QuantizeLinear" in name for name in diff.added)
    assert view.diff.toPlainText().startswith(f"layers added {len(diff.added)}")
    assert "total" not in view.diff.toPlainText()  # one side has no profile: no time deltas


def test_build_ahead_of_time_with_tensorrt_rtx(
    qtbot, make_window, samples: Path, tmp_path: Path, rtx
) -> None:
    """With TensorRT-RTX (installed in CI), the panel builds a real plan with no GPU: progress
    in the banner, the builder's layer account in the engine view, a rejected custom op as
    findings in Problems (cancel against the real builder: tests/core/test_tensorrt_rtx.py)."""
    model = tmp_path / "small_cnn.onnx"
    model.write_bytes((samples / "small_cnn.dynamo.onnx").read_bytes())
    window = make_window()
    wait_opened(qtbot, window, model)
    panel = window.build_panel
    panel.version.setCurrentText("rtx")
    assert panel.build_button.text() == "Build (ahead of time, no GPU needed)"
    assert "ships no trtexec" in panel.trtexec.toPlainText()
    panel.form.targets.setText("sm89, sm120")
    assert panel.polygraphy.toPlainText().startswith("POLYGRAPHY_USE_TENSORRT_RTX=1")
    assert "set_compute_capability(trt.ComputeCapability.SM120, 1)" in panel.script.toPlainText()
    panel.form.precision["fp16"].setChecked(True)  # TensorRT-RTX has no precision flags
    assert "TensorRT-RTX has no precision flags" in panel.problems.item(0).text()
    assert "Fix the problems" in panel.script.toPlainText()
    panel.form.precision["fp16"].setChecked(False)
    panel.build_button.click()
    qtbot.waitUntil(lambda: panel.banner.text().startswith("Built"), timeout=JOB_TIMEOUT_MS)
    text = panel.banner.text()
    assert "TensorRT-RTX 1." in text and "ahead of time for sm89, sm120" in text
    assert (tmp_path / "small_cnn.engine").stat().st_size > 100_000
    assert window.front == "Engine"  # the Engine panel comes to the front with the layers
    assert panel.engine_view.table.rowCount() >= 1  # the builder's own layer account
    summary = panel.engine_view.summary.text()
    assert "no times: the plan was built ahead of time" in summary
    assert "holds 11 ONNX nodes: node_Conv_27" in summary  # what the one ForeignNode is

    custom = tmp_path / "custom.onnx"
    custom.write_bytes((samples / "custom_fn_symbolic.torchscript.onnx").read_bytes())
    wait_opened(qtbot, window, custom)
    panel.version.setCurrentText("rtx")
    panel.build_button.click()
    qtbot.waitUntil(lambda: panel.build_button.isEnabled(), timeout=JOB_TIMEOUT_MS)
    assert "rejected custom.onnx at node '/customOp2'" in panel.banner.text()
    assert "namespace 'custom_domain'" in panel.problems.item(0).text()


def _dynamic_batch_model(path: Path) -> Path:
    """A Relu over ``image[N, 3, 8, 8]``: profiles are legal only on axis 0."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["image"], ["out"])],
        "dyn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 3, 8, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _consistent(panel) -> str:
    """The banner, Problems and the command panes tell one story; returns the first problem."""
    first = panel.problems.item(0).text()
    command = panel.trtexec.toPlainText()
    if first == "No problems for this TensorRT release.":
        assert panel.banner.text().startswith("Settings are valid"), panel.banner.text()
        assert command.startswith("trtexec "), command
    else:
        assert "problem(s)" in panel.banner.text() and first in panel.banner.text()
        assert command.startswith("Fix the problems"), command
    return first


def test_every_keystroke_in_profiles_leaves_the_panel_consistent(
    qtbot, make_window, tmp_path: Path
) -> None:
    """Item 1 of the GUI issue: min > opt stayed green with the previous command shown, and
    typing a profile raised. Typed key by key (pytest-qt fails the test on any exception raised
    in a slot); after every key the banner, Problems and trtexec agree."""
    window = make_window()
    wait_opened(qtbot, window, _dynamic_batch_model(tmp_path / "dyn.onnx"))
    panel = window.build_panel
    panel.version.setCurrentText("10.16")
    box = panel.form.profiles
    box.setFocus()
    seen: set[str] = set()
    for char in "image: 4x3x8x8 / 2x3x8x8 / 8x3x8x8":
        qtbot.keyClicks(box, char)
        seen.add(_consistent(panel))
    first = _consistent(panel)
    assert "min ≤ opt ≤ max" in first and "image" in first  # min 4 > opt 2 is a problem
    assert len(seen) > 2  # the partial texts were judged too, not only the last one
    box.selectAll()
    qtbot.keyClicks(box, "image: 1x3x8x8 / 2x3x8x8 / 8x3x8x8")
    assert _consistent(panel) == "No problems for this TensorRT release."
    command = panel.trtexec.toPlainText()
    assert "--minShapes=image:1x3x8x8" in command and "--optShapes=image:2x3x8x8" in command
    assert "problem" not in panel.banner.text()  # the stale error did not stay


def test_a_plugin_library_from_settings_loads_only_after_the_dialog(
    qtbot, make_window, samples: Path, tmp_path: Path, monkeypatch
) -> None:
    """A plugin library the settings name is not loaded until the user says yes in a dialog
    that names it; 'No' starts no job; 'Yes' is remembered for this file's content."""
    from PySide6.QtWidgets import QMessageBox

    from deploylens.core.consent import is_trusted

    library = tmp_path / "libplugin.so"
    library.write_bytes(b"\x7fELF" + bytes(60))
    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.build_panel
    panel.form.plugins.setText(str(library))
    asked: list[str] = []

    def answer(reply: QMessageBox.StandardButton):
        def question(parent, title, text, *args):
            asked.append(text)
            return reply

        return question

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.No))
    panel.build()
    assert asked and str(library) in asked[0] and "native code" in asked[0]
    assert panel.job is None and "not trusted" in panel.banner.text()
    assert not is_trusted(library)
    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.Yes))
    panel.build()
    assert is_trusted(library) and len(asked) == 2
    qtbot.waitUntil(lambda: panel.job is None, timeout=JOB_TIMEOUT_MS)  # the job ran and ended


def test_commands_wrap_between_flags_and_problems_wrap_whole(
    qtbot, make_window, samples: Path
) -> None:
    """The trtexec line wrapped inside flags (`--saveEng` / `ine=…`) and a problem longer than
    the list was cut at its edge: commands break at spaces only, problems wrap to be read whole."""
    from deploylens.core.trt.settings import BuildSettings

    window = make_window()
    window.resize(1366, 768)
    panel = window.build_panel
    panel.set_model(str(samples / "small_cnn.torchscript.onnx"), {"image": [1, 3, 32, 32]})
    panel.version.setCurrentText("10.16")
    panel.form.set_settings(BuildSettings(precisions=["fp16"], workspace_mb=512))
    panel.refresh()
    box = panel.trtexec
    box.resize(260, 300)
    box.show()
    qtbot.wait(20)
    text = box.toPlainText()
    block = box.document().firstBlock()
    breaks = 0
    while block.isValid():
        breaks += block.layout().lineCount() - 1
        block = block.next()
    assert breaks == 0  # a narrow pane scrolls; it never cuts a line, let alone a flag
    lines = text.splitlines()
    assert len(lines) > 3 and lines[0] == "trtexec \\"
    assert all(line.lstrip().startswith("-") for line in lines[1:])  # one option per line
    assert any(line.strip().startswith("--saveEngine=") for line in lines)
    script = text.replace("trtexec", "printf '%s\\0'", 1)  # bash itself reads the lines
    argv = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    settings = panel.form.settings()
    model = panel.model_path
    expected = shlex.split(trtexec_command(settings, "10.16", model, default_engine(model)))
    assert argv.stdout.split("\0")[:-1] == expected[1:]  # the same argv as the one-liner
    panel.form.set_settings(BuildSettings(strongly_typed=True, precisions=["fp16"]))
    panel.refresh()
    problems = panel.problems
    problems.resize(240, 110)
    qtbot.wait(20)
    item = problems.item(0)
    assert len(item.text()) > 60
    line = problems.fontMetrics().height()
    assert problems.visualItemRect(item).height() >= 2 * line  # wrapped, not cut
