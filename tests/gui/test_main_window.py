"""The main window with real widgets, real worker jobs and the bundled samples."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication

from deploylens.core.settings import AppSettings
from deploylens.core.worker.client import JobFailure
from deploylens.gui.dialogs.environment import EnvironmentDialog
from deploylens.gui.dialogs.error_details import ErrorDetailsDialog
from deploylens.gui.dialogs.preferences import PreferencesDialog
from deploylens.gui.notifications import install_excepthook
from deploylens.gui.qsettings import recent_files
from deploylens.gui.timeline.panel import TimelinePanel
from tests.gui.conftest import JOB_TIMEOUT_MS, wait_opened

EXPECTED_DOCKS = {
    "Start",
    "Engine",
    "Graph",
    "Op support",
    "Export",
    "Surgery",
    "Validate",
    "Build",
    "Sensitivity",
    "Timeline",
    "Model summary",
    "Jobs / Log",
}


def test_every_dock_is_a_real_panel(make_window) -> None:
    window = make_window()
    assert set(window.docks) == EXPECTED_DOCKS
    panels = window.all_panels()
    assert panels["Timeline"] is window.timeline_panel is window.docks["Timeline"].widget()
    assert isinstance(window.timeline_panel, TimelinePanel)
    assert all(window.docks[title].widget() is panel for title, panel in panels.items())


def test_the_panels_behind_the_front_one_are_built_when_first_shown(
    qtbot, make_window, samples: Path
) -> None:
    """The panels behind the Start page are built the first time they are needed, not at
    start (their modules cost ~0.12 s of CPU, a tenth of opening a 100k-node model); one built
    after a model opened hears that model as one built before would have."""
    window = make_window(persist_layout=False)
    qtbot.wait(50)
    assert window.panels == {}
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    assert window.panels == {}  # the open told no panel that was never shown
    window.docks["Validate"].raise_()
    qtbot.waitUntil(lambda: "Validate" in window.panels, timeout=2000)
    assert window.docks["Validate"].widget() is window.validate_panel
    assert window.validate_panel.model_path == window.document.summary.path
    assert set(window.panels) == {"Validate"}
    window.docks["Engine"].raise_()  # the Engine view is the Build panel's: both come
    qtbot.waitUntil(lambda: "Engine" in window.panels, timeout=2000)
    assert window.engine_view is window.build_panel.engine_view
    assert window.docks["Build"].widget() is window.build_panel


def test_an_empty_window_starts_on_the_start_page_and_loads_nothing_heavy(
    qtbot, make_window, samples: Path
) -> None:
    """First steps are on screen; the support registries (a long job) wait until the Op support
    panel is really shown; a sample on the start page opens and the graph comes forward."""
    window = make_window(persist_layout=False)
    qtbot.wait(200)  # let every deferred start-up call run
    assert window.front == "Start"
    assert set(window.start_page.buttons) == {"open", "pytorch", "trace", "engine"}
    names = [
        window.start_page.samples.item(i).text() for i in range(window.start_page.samples.count())
    ]
    assert any(name.startswith("small_cnn") for name in names)
    assert [job.title for job in window.jobs.jobs] == []  # nothing started at launch
    item = next(
        window.start_page.samples.item(i)
        for i in range(window.start_page.samples.count())
        if window.start_page.samples.item(i).text().startswith("small_cnn")
    )
    with qtbot.waitSignal(window.document.sig_opened, timeout=JOB_TIMEOUT_MS):
        window.start_page.samples.itemClicked.emit(item)
    qtbot.waitUntil(lambda: window.front == "Graph", timeout=5000)
    assert "Op support registries" not in [job.title for job in window.jobs.jobs]
    window.docks["Op support"].raise_()
    qtbot.waitUntil(
        lambda: "Op support registries" in [job.title for job in window.jobs.jobs], timeout=5000
    )


def test_the_active_panel_has_most_of_the_window_at_every_size(qtbot, make_window) -> None:
    """Jobs/Log took 44 % of the height at 1920×1080 and the summary half the width: the panel
    in front now keeps at least 60 % of the window at 1366×768, 1920×1080 and 3840×2160."""
    for width, height in ((1366, 768), (1920, 1080), (3840, 2160)):
        window = make_window(persist_layout=False)
        window.resize(width, height)
        qtbot.wait(100)
        window.apply_default_proportions()
        qtbot.wait(50)
        for title in ("Graph", "Timeline", "Engine"):
            window.docks[title].raise_()
            qtbot.wait(20)
            panel = window.docks[title].widget()
            share = panel.width() * panel.height() / (window.width() * window.height())
            assert share >= 0.6, (width, height, title, round(share, 3))
        summary = window.docks["Model summary"]
        assert 250 <= summary.width() <= 470
        assert window.docks["Jobs / Log"].height() < 0.45 * window.height()


def test_open_a_sample_fills_the_summary(qtbot, make_window, samples: Path) -> None:
    window = make_window()
    model = samples / "small_cnn.dynamo.onnx"
    wait_opened(qtbot, window, model)
    text = window.summary_panel.visible_text()
    assert "image | tensor(float32) | [1, 3, 32, 32]" in text
    assert "ai.onnx | 18" in text
    assert "Conv | 3 | ai.onnx" in text
    assert window.windowTitle() == "small_cnn.dynamo.onnx — DeployLens"
    assert recent_files()[0] == str(model)
    assert window.recent_menu.actions()[0].text() == str(model)
    row = window.jobs_panel.rows[window.document.job.id]
    assert window.jobs_panel.table.item(row, 1).text() == "done"
    assert window.jobs_panel.bar(window.document.job).value() == 1000
    assert not window.jobs_panel.table.cellWidget(row, 4).isEnabled()


def test_bad_file_shows_one_sentence_and_the_app_lives(qtbot, make_window, tmp_path: Path) -> None:
    window = make_window()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 50)
    with qtbot.waitSignal(window.document.sig_failed, timeout=JOB_TIMEOUT_MS):
        window.open_path(bad)
    assert window.notification_bar.isVisible()
    assert "bad.onnx" in window.notification_bar.label.text()
    assert "Traceback" not in window.notification_bar.label.text()
    assert "Could not open the model" in window.summary_panel.message.text()
    assert not window.notifier.dialogs  # a user error is no bug: no traceback dialog


def test_missing_external_data_opens_with_a_visible_problem(
    qtbot, make_window, tmp_path: Path
) -> None:
    from tests.helpers.onnx_models import save_with_external_data, weighty_model

    path = save_with_external_data(weighty_model(2, 10), tmp_path / "m.onnx")
    (tmp_path / "weights.bin").unlink()
    window = make_window()
    wait_opened(qtbot, window, path)
    assert "weights.bin' is missing" in window.notification_bar.label.text()
    assert "problem | external data file 'weights.bin' is missing" in (
        window.summary_panel.visible_text()
    )


def test_drop_a_file(qtbot, make_window, samples: Path) -> None:
    window = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(samples / "roll_dims.dynamo.onnx"))])
    event = QDropEvent(
        QPointF(QPoint(50, 50)),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(window.document.sig_opened, timeout=JOB_TIMEOUT_MS):
        window.dropEvent(event)
    assert window.document.summary.inputs[0].name == "x"


def test_project_save_and_reopen(qtbot, make_window, samples: Path, tmp_path: Path) -> None:
    window = make_window()
    wait_opened(qtbot, window, samples / "asinh.dynamo.onnx")
    project = window.document.save_project(tmp_path / "work.deploylens.toml")
    other = make_window()
    wait_opened(qtbot, other, project)
    assert other.document.summary.path == str(samples / "asinh.dynamo.onnx")


def test_a_broken_project_keeps_the_model_shown_and_a_failed_open_takes_its_graph(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """The graph shows a model from the GUI's parse before its summary: a project file that
    fails to load names no model and leaves the shown one alone; the model's own failed open
    (its worker's failure) takes the graph laid out from it away."""
    from deploylens.core.worker.client import JobFailure

    window = make_window()
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        window.open_path(samples / "asinh.dynamo.onnx")
    broken = tmp_path / "broken.deploylens.toml"
    broken.write_text("this is [not toml")
    with qtbot.waitSignal(window.document.sig_failed, timeout=JOB_TIMEOUT_MS):
        window.open_path(broken)
    assert window.graph_panel.model is not None and window.graph_panel.pages.currentIndex() == 1
    document = window.document
    document._on_failed(document.job, JobFailure("crash", "the worker died"))  # its own job
    assert window.graph_panel.model is None
    assert "the worker died" in window.graph_panel.empty.text()


def test_window_layout_is_persisted(make_window) -> None:
    first = make_window()
    first.docks["Timeline"].hide()
    first.docks["Jobs / Log"].setFloating(True)
    first.close()
    second = make_window()
    assert not second.docks["Timeline"].isVisible()
    assert second.docks["Jobs / Log"].isFloating()
    assert second.docks["Graph"].isVisible()


def test_crash_opens_details_with_copyable_diagnostics(make_window) -> None:
    window = make_window()
    failure = JobFailure(
        "crashed",
        "The worker crashed in native code (SIGSEGV).",
        "The app is fine",
        stderr_tail="Fatal Python error: Segmentation fault",
    )
    window.notifier.failure(failure, "Open")
    (dialog,) = window.notifier.dialogs
    assert isinstance(dialog, ErrorDetailsDialog) and dialog.isVisible()
    dialog.copy_diagnostics()
    copied = QGuiApplication.clipboard().text()
    assert "SIGSEGV" in copied and "Segmentation fault" in copied and "DeployLens" in copied


def test_excepthook_turns_bugs_into_a_dialog(make_window, monkeypatch) -> None:
    window = make_window()
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    install_excepthook(window.notifier)
    try:
        raise KeyError("boom")
    except KeyError:
        sys.excepthook(*sys.exc_info())
    (dialog,) = window.notifier.dialogs
    assert "KeyError" in dialog.diagnostics and "test_excepthook" in dialog.diagnostics


def test_preferences_checks_the_interpreter_by_handshake(qtbot, make_window) -> None:
    window = make_window()
    dialog = PreferencesDialog(window.jobs, window)
    qtbot.addWidget(dialog)
    dialog.python_edit.setText("/nonexistent/python")
    dialog.check()
    qtbot.waitUntil(lambda: dialog.status.text().startswith("Not usable"), timeout=JOB_TIMEOUT_MS)
    assert "Could not start the worker interpreter /nonexistent/python" in dialog.status.text()
    dialog.python_edit.setText(sys.executable)
    dialog.check()
    qtbot.waitUntil(lambda: dialog.status.text().startswith("OK"), timeout=JOB_TIMEOUT_MS)
    assert dialog.table.rowCount() > 5
    dialog.save()
    assert AppSettings.load().worker_python == sys.executable
    assert window.jobs.worker_python() == sys.executable


def test_environment_dialog_lists_versions_and_pip_lines(qtbot, make_window) -> None:
    window = make_window()
    dialog = EnvironmentDialog(window.jobs, window)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.worker_table.rowCount() > 0, timeout=JOB_TIMEOUT_MS)
    text = dialog.text()
    assert "PySide6" in text and "onnxruntime\t1." in text
    assert "tensorrt\tmissing" in text and "-m pip install tensorrt" in text
    assert "torch (imported)" in text


def test_cancel_button_in_the_jobs_dock(qtbot, make_window) -> None:
    window = make_window()
    job = window.jobs.submit("selftest.sleep", {"seconds": 60}, "Long sleep")
    with qtbot.waitSignal(job.sig_progress, timeout=JOB_TIMEOUT_MS):
        pass
    row = window.jobs_panel.rows[job.id]
    button = window.jobs_panel.table.cellWidget(row, 4)
    with qtbot.waitSignal(job.sig_failed, timeout=5000) as blocker:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert blocker.args[0].kind == "cancelled"
    assert window.jobs_panel.table.item(row, 1).text().startswith("cancelled")
    assert not button.isEnabled()
    # in a narrow left column the Status column gives its room to the job's name; the bar
    # says the state instead
    panel = window.jobs_panel
    panel.resize(260, 300)
    assert panel.table.isColumnHidden(1)
    qtbot.waitUntil(lambda: panel.bar(job).format() == "cancelled", timeout=5000)
    assert "cancelled" in panel.bar(job).toolTip()
    panel.resize(600, 300)
    assert not panel.table.isColumnHidden(1)
    assert "[Long sleep] cancelled" in window.jobs_panel.log.toPlainText()


def test_a_newer_open_replaces_the_older(qtbot, make_window, samples: Path) -> None:
    window = make_window()
    failures: list[object] = []
    window.document.sig_failed.connect(failures.append)
    window.open_path(samples / "asinh.dynamo.onnx")
    wait_opened(qtbot, window, samples / "roll_dims.dynamo.onnx")
    qtbot.wait(300)
    assert window.document.summary.path.endswith("roll_dims.dynamo.onnx")
    assert failures == []  # the replaced job's end is not reported as a failure
    assert "roll_dims" in window.windowTitle()


def test_notification_banner_can_be_dismissed(make_window) -> None:
    window = make_window()
    window.notifier.user_message("The file is empty.", "Pick another one.")
    assert window.notification_toolbar.isVisible()
    assert "Pick another one." in window.notification_bar.label.text()
    window.notification_bar.dismiss()
    assert not window.notification_toolbar.isVisible()


def test_a_missing_module_offers_the_training_environments_python(qtbot, make_window) -> None:
    """A job that needs torch or TensorRT (never in the packaged bundle) says so and offers the
    one way out: another worker interpreter, in Preferences."""
    from deploylens.core.worker.client import JobFailure
    from deploylens.gui.dialogs.preferences import PreferencesDialog

    window = make_window()
    bar = window.notification_bar
    window.notifier.failure(
        JobFailure("missing_dependency", "this job needs the Python module 'torch'", "…"), "Export"
    )
    assert bar.action.isVisibleTo(bar) and "Export: this job needs" in bar.label.text()
    bar.action.click()
    assert any(
        isinstance(w, PreferencesDialog) and w.isVisible()
        for w in window.findChildren(PreferencesDialog)
    )
    window.notifier.user_message("a plain user error")
    assert not bar.action.isVisibleTo(bar)  # no offer where it does not help


def test_summary_property_names_do_not_depend_on_the_file_path(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """The packaging smoke test compares the summary's labels between two renders of one model
    at different paths: a long path shrank the Property column and elided 'Producer'."""
    widths = []
    for folder in ("a", "a-much-longer-folder-name-than-the-first-one-xxxxxxxxxxxxxxxx"):
        (tmp_path / folder).mkdir()
        model = tmp_path / folder / "small_cnn.dynamo.onnx"
        model.write_bytes((samples / "small_cnn.dynamo.onnx").read_bytes())
        window = make_window(persist_layout=False)
        window.resize(1400, 860)
        wait_opened(qtbot, window, model)
        tree = window.summary_panel.tree
        widths.append(tree.columnWidth(0))
    assert widths[0] == widths[1]
    metrics = window.summary_panel.tree.fontMetrics()
    assert widths[0] >= metrics.horizontalAdvance("Producer")


def test_a_malformed_remote_host_is_never_saved_and_never_stops_local_work(
    qtbot, make_window, samples: Path
) -> None:
    """Preferences saved 'root@@bad host:99999'; afterwards every job failed, opening a local
    model included, with "(no further details)". Now: Save refuses it and says why; a host
    malformed in a hand-edited settings file leaves opening a model alone, and a job that goes
    to the host fails with a sentence naming it."""
    window = make_window()
    dialog = PreferencesDialog(window.jobs, window)
    qtbot.addWidget(dialog)
    for bad, why in (
        ("root@@bad host:99999", "has a space"),
        ("root@@bad:22", "not a user name"),
        ("me@gpu:99999", "not between 1 and 65535"),
    ):
        dialog.host_edit.setText(bad)
        assert dialog.save() is False
        assert dialog.status.text().startswith("Not saved") and why in dialog.status.text()
        assert AppSettings.load().remote_host == ""
    AppSettings(remote_host="root@@bad host:99999").save()  # edited by hand
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        wait_opened(qtbot, window, samples / "small_cnn.torchscript.onnx")
    assert window.graph_panel.model is not None  # opened here, the host never asked
    job = window.jobs.submit("env.probe", {}, "probe on the host")
    with qtbot.waitSignal(job.sig_failed, timeout=JOB_TIMEOUT_MS) as failed:
        pass
    failure = failed.args[0]
    assert failure.kind == "address" and "'root@@bad host:99999'" in failure.message
    assert "Preferences" in failure.hint


def test_each_model_owns_its_state_and_the_forms_keep_the_users_choices(
    qtbot, make_window, samples: Path
) -> None:
    """Opening another model carried over the search text, the depth spinner, the surgery's
    chosen nodes and diff and the sensitivity results, while forms the user had set reset to
    defaults. Now what named the last model goes and the user's choices stay."""
    from deploylens.core.surgery.result import GraphDiff
    from deploylens.core.trt.settings import BuildSettings

    window = make_window()
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        wait_opened(qtbot, window, samples / "small_cnn.torchscript.onnx")
    graph, surgery = window.graph_panel, window.surgery_panel
    graph.search_box.setText("Conv")
    graph.run_search()
    graph.depth_box.setValue(3)
    assert graph.results.count() > 0
    surgery.set_chosen(["/stem/stem.0/Conv"])
    surgery._show_diff(GraphDiff(added=["/stem/stem.0/Conv_fused"], removed=[], changed=[]))
    window.validate_panel.atol.setText("0.003")
    window.validate_panel.torch_spec.setText("torchvision:resnet18")
    window.build_panel.form.set_settings(
        BuildSettings(workspace_mb=512, layer_precisions={"/stem/stem.0/Conv": "fp32"})
    )
    sensitivity = window.sensitivity_panel
    sensitivity.table.setRowCount(4)  # as if an analysis had listed four of its nodes
    sensitivity.build_button.setEnabled(True)

    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        wait_opened(qtbot, window, samples / "roll_dims.torchscript.onnx")
    assert graph.search_box.text() == "" and graph.results.count() == 0
    assert graph.depth_box.value() == 0
    assert surgery.chosen == [] and surgery.diff.topLevelItemCount() == 0
    assert sensitivity.table.rowCount() == 0 and not sensitivity.build_button.isEnabled()
    assert window.validate_panel.torch_spec.text() == ""  # it named the last model's module
    assert window.validate_panel.atol.text() == "0.003"  # the user's tolerance stays
    settings = window.build_panel.form.settings()
    assert settings.workspace_mb == 512 and not settings.layer_precisions


def test_surgery_and_build_on_a_bundled_sample_write_to_the_users_folder(
    qtbot, make_window, samples: Path
) -> None:
    """Surgery wrote its edited model into the bundled samples' folder (the install tree) and
    Build's commands named an engine there: both now go to the user's outputs folder."""
    from deploylens.core.outputs import outputs_dir

    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.torchscript.onnx")
    assert Path(window.surgery_panel.output_path()).parent == outputs_dir()
    build = window.build_panel
    build.version.setCurrentText("10.16")
    build.refresh()
    command = build.trtexec.toPlainText()
    assert f"--saveEngine={outputs_dir() / 'small_cnn.torchscript.engine'}" in command
    assert str(samples / "small_cnn.torchscript.engine") not in command


def test_file_open_takes_traces_and_engine_json_by_content(
    qtbot, make_window, artifacts: Path, tmp_path: Path
) -> None:
    """File → Open refused traces and engine JSON (they had to be opened from their own panel,
    and only under their usual names). Now the content decides, whatever the file is called."""
    import shutil

    window = make_window()
    trex = next(artifacts.rglob("fp16/resnet.onnx.engine.graph.json"))
    layers = shutil.copy(trex, tmp_path / "engine.graph.json")
    shutil.copy(trex.with_name("resnet.onnx.engine.profile.json"), tmp_path / "engine.profile.json")
    window.open_path(layers)  # its profile, beside it under TREx's naming, comes along
    assert window.front == "Engine" and window.engine_view.info is not None
    assert window.engine_view.times  # joined with the profile
    trace = shutil.copy(
        next(artifacts.rglob("hta-holistictraceanalysis/call_stack/backward_thread.json")),
        tmp_path / "capture.txt",  # a name that says nothing
    )
    window.open_path(trace)
    assert window.front == "Timeline"
    qtbot.waitUntil(lambda: window.timeline_panel.trace is not None, timeout=JOB_TIMEOUT_MS)
    assert window.timeline_panel.path == str(trace)
    neither = tmp_path / "config.json"
    neither.write_text('{"name": "not a trace", "values": [1, 2]}')
    window.open_path(neither)
    assert window.document.model_path is None  # not sent to the ONNX reader as a model
    assert "neither a trace" in window.notification_bar.label.text()


def test_menus_reach_traces_samples_and_help(qtbot, make_window) -> None:
    window = make_window()
    menus = {m.title().replace("&", ""): m for m in (a.menu() for a in window.menuBar().actions())}
    file_items = [a.text().replace("&", "") for a in menus["File"].actions()]
    assert {"Open…", "Open Trace…", "Open Engine Layers…", "Open Sample"} <= set(file_items)
    samples = next(a.menu() for a in menus["File"].actions() if a.text() == "Open &Sample")
    assert len(samples.actions()) >= 5
    help_items = [a.text().replace("&", "") for a in menus["Help"].actions() if a.text()]
    assert len(help_items) >= 4 and "About DeployLens…" in help_items


def test_the_panel_keeps_its_share_after_maximize_restart_and_a_moved_dock(
    qtbot, make_window
) -> None:
    """Once maximized the extra width went to the left column (the panel fell to 56 % at
    1920×1080 and 49 % at 3840×2160) and that layout came back after a restart. Now: grow
    the window, restart from the saved layout, move Jobs/Log to the bottom — the panel in front
    keeps ≥ 60 % each time."""
    from deploylens.gui.main_window import PANEL_SHARE

    window = make_window()
    window.resize(1400, 860)
    qtbot.wait(100)
    window.apply_default_proportions()
    window.docks["Graph"].raise_()
    for size in ((1920, 1080), (3840, 2160)):  # what maximizing does to the window
        window.resize(*size)
        qtbot.waitUntil(lambda: window.panel_share() >= PANEL_SHARE, timeout=2000)
    window.save_layout()
    window.close()
    again = make_window()  # a restart: the saved geometry and docks come back
    again.resize(3840, 2160)
    again.docks["Timeline"].raise_()
    qtbot.waitUntil(lambda: again.panel_share() >= PANEL_SHARE, timeout=2000)
    jobs = again.docks["Jobs / Log"]
    again.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, jobs)  # the user drags it
    again.resizeDocks([jobs], [int(0.5 * again.height())], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: again.panel_share() >= PANEL_SHARE, timeout=2000)
    assert again.panel_share() >= PANEL_SHARE, round(again.panel_share(), 3)


LAUNCH_SCRIPT = """
import os, sys
from deploylens.gui.app import main

def watch(window):
    jobs = [window.jobs_panel.table.item(r, 0).text()
            for r in range(window.jobs_panel.table.rowCount())]
    print("jobs", jobs, flush=True)

    def loaded(graph):
        print("loaded", window.graph_panel.path, "pyqtgraph" in sys.modules, flush=True)
        print("blas threads", os.environ.get("OPENBLAS_NUM_THREADS"), flush=True)
        os._exit(0)

    window.graph_panel.sig_loaded.connect(loaded)
    window.document.sig_failed.connect(lambda failure: (print(failure.message), os._exit(3)))

print("numpy before main", "numpy" in sys.modules, flush=True)
main([sys.argv[1]], on_window=watch)
os._exit(4)
"""


def test_a_model_on_the_command_line_opens_before_the_window_and_without_pyqtgraph(
    tmp_path: Path,
) -> None:
    """``deploylens MODEL``: the model's worker starts before the window's modules are imported
    (``app.open_early``), the window takes its jobs over (listed in Jobs / Log) and shows the
    graph; no panel imported pyqtgraph to get there (0.2–0.3 s of the start). numpy loads with
    one OpenBLAS thread (its spare one spun ~0.1 s of CPU: ``core/blas.py``)."""
    import os
    import subprocess

    import onnx

    from tests.helpers.onnx_models import chain_model

    path = tmp_path / "launched.onnx"
    onnx.save(chain_model(), path)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DEPLOYLENS_CONFIG_DIR": str(tmp_path)}
    env.pop("OPENBLAS_NUM_THREADS", None)
    done = subprocess.run([sys.executable, "-c", LAUNCH_SCRIPT, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "jobs ['Open launched.onnx']" in done.stdout
    assert f"loaded {path} False" in done.stdout
    assert "numpy before main False" in done.stdout  # so the setting came before its import
    assert "blas threads 1" in done.stdout


def test_the_gui_thread_collector_waits_while_a_build_runs(make_window) -> None:
    """``collections_paused`` around a build that allocates much (a 100k-node graph's IR):
    the collector's timer skips while it runs and collects as usual after."""
    import gc

    from deploylens.gui.common.qt_app import application, collections_paused

    make_window()
    collector = application()._deploylens_gc  # type: ignore[attr-defined]
    walked: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            walked.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        cycles = []
        for _ in range(collector.threshold[0] + 10):  # past the youngest generation's threshold
            box: list = []
            box.append(box)
            cycles.append(box)
        del cycles
        with collections_paused():
            collector.check()
            assert walked == [] and collector.paused == 1
        collector.check()
        assert walked and walked[0] == 0 and collector.paused == 0
    finally:
        gc.callbacks.remove(seen)


@pytest.mark.parametrize(
    ("table", "said"),
    [("schema = 0", "schema = 0 is not a project schema"),
     ("schema = true", "no [deploylens] schema number"),
     ('schema = 2\n[model]\npath = "loop/m.onnx"', "symbolic link loop")],
)  # fmt: skip
def test_a_project_that_cannot_load_is_said_and_the_window_stays(
    qtbot, make_window, tmp_path: Path, table: str, said: str
) -> None:
    """Issue 44: the GUI launched on a project with schema = 0 (or true, or a [model] path
    through a symlink loop) exited 1 after 5 s with nothing said. The window stays, the open
    failure says which key is wrong."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    project = tmp_path / "p.deploylens.toml"
    project.write_text(f"[deploylens]\n{table}\n")
    window = make_window()
    with qtbot.waitSignal(window.document.sig_failed, timeout=JOB_TIMEOUT_MS) as failed:
        window.open_path(project)
    assert said in failed.args[0].message
    assert window.isVisible()


def test_every_panel_is_wired_by_the_one_contract(qtbot, make_window, samples: Path) -> None:
    """The shared signals are wired in one loop (issue 46): what any panel says lands in the
    status bar, and a node any pointing panel names is looked up in the graph (an unknown name
    comes back as the graph's own status message)."""
    from tests.gui.test_graph_panel import open_graph

    window, _panel = open_graph(qtbot, make_window, samples / "small_cnn.dynamo.onnx")
    talking = [window.graph_panel, window.support_panel, window.export_panel,
               window.surgery_panel, window.validate_panel, window.build_panel,
               window.sensitivity_panel, window.timeline_panel]  # fmt: skip
    for panel in talking:
        text = f"hello from {type(panel).__name__}"
        panel.sig_message.emit(text)
        assert window.statusBar().currentMessage() == text
    for panel in (window.surgery_panel, window.validate_panel, window.build_panel,
                  window.sensitivity_panel):  # fmt: skip
        name = f"no_such_node_from_{type(panel).__name__}"
        panel.sig_node_selected.emit(name)
        assert window.statusBar().currentMessage() == f"No node named {name} in this graph."


def test_every_panel_that_follows_the_model_hears_one_opened_model(
    qtbot, make_window, samples: Path
) -> None:
    """Model-opened is part of the one contract too (issue 46): each panel that follows the
    open model hears the same ``OpenedModel`` in one loop, and a panel with a ``set_model``
    the loop does not reach is named (the graph and support panels share the document's
    parse instead)."""
    from deploylens.gui.common.opened import OpenedModel

    window = make_window(persist_layout=False)
    heard: dict[str, OpenedModel] = {}
    for panel in window.model_views:
        original = panel.model_opened

        def record(opened: OpenedModel, panel=panel, original=original) -> None:
            heard[type(panel).__name__] = opened
            original(opened)

        panel.model_opened = record
    path = samples / "small_cnn.dynamo.onnx"
    wait_opened(qtbot, window, path)
    assert set(heard) == {type(p).__name__ for p in window.model_views}
    assert len({id(o) for o in heard.values()}) == 1  # one object, told to all
    opened = next(iter(heard.values()))
    assert Path(opened.path) == path.resolve() or Path(opened.path) == path
    assert opened.inputs == {"image": [1, 3, 32, 32]}
    assert window.validate_panel.model_path == opened.path
    panels = list(window.all_panels().values())
    followers = [p for p in panels if hasattr(p, "set_model")]
    shares_parse = {id(window.graph_panel), id(window.support_panel)}
    forgotten = [type(p).__name__ for p in followers
                 if id(p) not in shares_parse and p not in window.model_views]  # fmt: skip
    assert not forgotten, forgotten


def test_the_support_matrix_reaches_the_export_panel_whenever_it_is_built(
    qtbot, make_window
) -> None:
    """The export fix ladder uses the support matrix: an export panel built after the matrix
    loaded takes it from the support panel, one built before hears it when it loads."""
    late = make_window(persist_layout=False)
    with qtbot.waitSignal(late.support_panel.sig_ready, timeout=120_000):
        late.support_panel.ensure_loaded()
    assert "Export" not in late.panels
    assert late.export_panel.matrix is late.support_panel.matrix is not None
    early = make_window(persist_layout=False)
    assert early.export_panel.matrix is None
    with qtbot.waitSignal(early.support_panel.sig_ready, timeout=120_000):
        early.support_panel.ensure_loaded()
    assert early.export_panel.matrix is early.support_panel.matrix is not None
