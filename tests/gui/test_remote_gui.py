"""The GUI's jobs on a remote host, for real: OpenSSH's server on a loopback port with a
throwaway user and key (tests/helpers/loopback_sshd.py). The model's 48 MB of external data
goes to the host while the window keeps handling events (the send's progress reaches it);
the answer names local paths; Help → Environment says which host answered; Preferences
checks a host before saving it; a cancel while sending ends the job at once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from deploylens.core.settings import AppSettings
from deploylens.core.worker import protocol
from deploylens.core.worker.remote import OPTIONS_ENV
from deploylens.gui.dialogs.environment import EnvironmentDialog
from deploylens.gui.dialogs.preferences import PreferencesDialog
from deploylens.gui.job_manager import JobManager
from tests.helpers.loopback_sshd import drop_connections
from tests.helpers.onnx_models import external_data_matmul

TIMEOUT = 120_000


@pytest.fixture
def remote(sshd: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    AppSettings(remote_host=sshd["host"], remote_python=sys.executable).save()
    return sshd


def test_a_remote_job_sends_its_model_while_the_window_lives_and_answers_locally(
    qtbot, remote: dict[str, str], tmp_path: Path
) -> None:
    manager = JobManager()
    model = external_data_matmul(tmp_path)
    seen: list[tuple[float | None, str]] = []
    job = manager.submit(
        "model.inspect", {"path": str(model)}, "inspect remotely", remote=remote["host"]
    )  # opening a model runs here unless a host is named (Job.here)
    job.sig_progress.connect(lambda fraction, text: seen.append((fraction, text)))
    with qtbot.waitSignal(job.sig_finished, timeout=TIMEOUT) as done:
        pass
    summary = done.args[0]  # the typed ModelSummary, read back strictly
    assert summary.path == str(model)  # the host's path rewritten to ours
    assert summary.external_data and summary.op_counts[0].op_type == "MatMul"
    sending = [f for f, text in seen if text.startswith("sending big.onnx") and f is not None]
    assert sending and 0 < sending[0] < 1  # the send's progress reached the window as it went
    hello = job.session.hello
    assert hello is not None and hello["python"]["host"]  # the worker's own handshake, over ssh
    sent = Path(remote["home"]) / ".cache/deploylens/files"
    assert any((d / "big.weights").is_file() for d in sent.iterdir())
    manager.shutdown()


def test_environment_and_preferences_ask_the_remote_host(qtbot, remote: dict[str, str]) -> None:
    manager = JobManager()
    dialog = EnvironmentDialog(manager)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.job.sig_finished, timeout=TIMEOUT):
        pass
    assert f"on {remote['host']}" in dialog.status.text()
    assert dialog.worker_table.rowCount() > 3 and "onnx" in dialog.text()
    preferences = PreferencesDialog(manager)
    qtbot.addWidget(preferences)
    assert preferences.host_edit.text() == remote["host"]
    preferences.host_edit.setText("-oProxyCommand=touch /tmp/x")  # never reaches ssh
    preferences.check()
    assert preferences.status.text().startswith("Not usable")
    preferences.host_edit.setText(remote["host"])
    preferences.check()
    with qtbot.waitSignal(preferences.job.sig_finished, timeout=TIMEOUT):
        pass
    assert preferences.status.text().startswith("OK:") and " on " in preferences.status.text()
    preferences.remote_python_edit.setText(sys.executable)
    preferences.save()
    assert AppSettings.load().remote_host == remote["host"]
    manager.shutdown()


def test_a_cancel_while_the_model_is_on_its_way_ends_the_job(
    qtbot, remote: dict[str, str], tmp_path: Path
) -> None:
    manager = JobManager()
    model = external_data_matmul(tmp_path, 96)
    job = manager.submit(
        "model.inspect", {"path": str(model)}, "inspect remotely", remote=remote["host"]
    )  # opening a model runs here unless a host is named (Job.here)
    sent: list[float] = []

    def cancel_midway(fraction: float | None, text: str) -> None:
        if text.startswith("sending") and fraction is not None and not sent:
            sent.append(fraction)
            job.cancel()  # the user's click, while the weights are on their way

    job.sig_progress.connect(cancel_midway)
    with qtbot.waitSignal(job.sig_failed, timeout=TIMEOUT) as failed:
        pass
    assert sent and sent[0] < 1
    assert failed.args[0].kind == protocol.CANCELLED
    assert job.process.state() == job.process.ProcessState.NotRunning  # no worker was started
    manager.shutdown()


def test_a_connection_dropped_while_sending_is_tried_once_more_from_the_gui(
    qtbot, remote: dict[str, str], tmp_path: Path
) -> None:
    manager = JobManager()
    model = external_data_matmul(tmp_path, 64)
    job = manager.submit(
        "model.inspect", {"path": str(model)}, "inspect remotely", remote=remote["host"]
    )  # opening a model runs here unless a host is named (Job.here)
    logs: list[str] = []
    job.sig_log.connect(lambda level, text: logs.append(text))
    dropped: list[int] = []

    def drop_midway(fraction: float | None, text: str) -> None:
        if text.startswith("sending") and fraction is not None and fraction > 0.3 and not dropped:
            dropped.append(drop_connections(remote))

    job.sig_progress.connect(drop_midway)
    with qtbot.waitSignal(job.sig_finished, timeout=TIMEOUT) as done:
        pass
    assert dropped and job.retried and any("Trying once more" in text for text in logs)
    assert done.args[0].path == str(model)
    manager.shutdown()
