"""The QProcess worker client with the real worker: the GUI survives everything a job does."""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from PySide6.QtCore import QProcess, QTimer

from deploylens.core.worker import protocol
from deploylens.gui.worker_client import WorkerJob

TIMEOUT = 30_000


def _run(qtbot, job: WorkerJob, signal: str = "sig_finished"):
    with qtbot.waitSignal(getattr(job, signal), timeout=TIMEOUT) as blocker:
        job.start()
    assert job.wait_done(5000)
    return blocker.args[0]


def test_progress_and_result(qtbot) -> None:
    job: WorkerJob[object] = WorkerJob("selftest.progress", {"steps": 3})
    seen: list[float | None] = []
    job.sig_progress.connect(lambda fraction, text: seen.append(fraction))
    hello: list[dict] = []
    job.sig_hello.connect(hello.append)
    assert _run(qtbot, job) == {"steps": 3}
    assert seen == [1 / 3, 2 / 3, 1.0]
    assert hello[0]["protocol"] == protocol.PROTOCOL_VERSION
    assert job.state == "done"


def test_native_crash_is_reported_and_the_gui_lives_on(qtbot) -> None:
    job: WorkerJob[object] = WorkerJob("selftest.segfault")
    failure = _run(qtbot, job, "sig_failed")
    assert not Path(str(job.workdir)).exists()  # a crashed worker leaves no scratch folder
    assert failure.kind == "crashed"
    assert "SIGSEGV" in failure.message
    assert "Segmentation fault" in failure.stderr_tail
    # The GUI process is fine: another job runs normally right after.
    assert _run(qtbot, WorkerJob("selftest.echo", {"a": 1}))["params"] == {"a": 1}


def test_cancel_of_a_sleeping_job(qtbot) -> None:
    job: WorkerJob[object] = WorkerJob("selftest.sleep", {"seconds": 60})
    with qtbot.waitSignal(job.sig_progress, timeout=TIMEOUT):
        job.start()
    started = time.monotonic()
    with qtbot.waitSignal(job.sig_failed, timeout=5000) as blocker:
        job.cancel()
    assert blocker.args[0].kind == protocol.CANCELLED
    assert job.wait_done(2000)
    assert time.monotonic() - started < 2.0
    assert job.process.state() == QProcess.ProcessState.NotRunning
    assert not Path(str(job.workdir)).exists()


def test_missing_dependency_and_user_error(qtbot) -> None:
    failure = _run(qtbot, WorkerJob("selftest.import", {"module": "tensorrt"}), "sig_failed")
    assert failure.kind == "missing_dependency"
    assert failure.hint == f"{sys.executable} -m pip install tensorrt"
    failure = _run(qtbot, WorkerJob("selftest.user_error", {"message": "no"}), "sig_failed")
    assert (failure.kind, failure.message, failure.traceback) == ("user", "no", "")


def test_interpreter_that_cannot_start(qtbot) -> None:
    failure = _run(qtbot, WorkerJob("selftest.echo", python="/nonexistent/python"), "sig_failed")
    assert failure.kind == "start_failed"
    assert "/nonexistent/python" in failure.message


def test_stale_protocol(qtbot, tmp_path: Path) -> None:
    fake = tmp_path / "fake_stale_worker.py"  # a FAKE old worker, named as such
    fake.write_text(
        "import json, sys\nprint(json.dumps({'type': 'hello', 'protocol': 0, 'python': "
        "{'version_info': [3, 11, 0]}, 'packages': {}}), flush=True)\nsys.stdin.read()\n"
    )
    job: WorkerJob[object] = WorkerJob("selftest.echo")
    job.argv = [sys.executable, str(fake)]
    failure = _run(qtbot, job, "sig_failed")
    assert failure.kind == "protocol_mismatch"
    assert "speaks protocol version 0" in failure.message


def test_event_loop_keeps_running_while_a_job_works(qtbot) -> None:
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    _run(qtbot, WorkerJob("selftest.progress", {"steps": 10, "delay": 0.15}))
    timer.stop()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 20
    assert max(gaps) < 0.75  # a blocked loop would freeze for the whole 1.5 s job


def test_nothing_starts_a_worker_after_the_window_shut_down(qtbot) -> None:
    """A graph laid out after the window closed submitted its shapes job, and that worker
    outlived the window: after shutdown a submitted job ends cancelled with no process."""
    from deploylens.gui.job_manager import JobManager

    manager = JobManager()
    manager.shutdown()
    job = manager.submit("selftest.progress", {"steps": 1})
    assert job.state == "failed" and job.failure is not None
    assert job.failure.kind == protocol.CANCELLED
    assert job.process.state() == QProcess.ProcessState.NotRunning
    assert job.process.processId() == 0 and job.workdir is None


def test_a_worker_is_told_to_go_before_its_answer_is_heard(qtbot) -> None:
    """A handler of the answer that shuts the jobs down (the startup bench closing the app on
    the open's findings) waited its whole timeout: the worker was told to shut down only
    after the handlers ran. Waiting inside the handler now sees the worker leave by itself."""
    from deploylens.gui.job_manager import JobManager

    manager = JobManager()
    job = manager.submit("selftest.echo", {"a": 1})
    ended: list[bool] = []
    job.on_finished(lambda payload: ended.append(job.wait_done(20_000)))
    try:
        qtbot.waitUntil(lambda: bool(ended), timeout=TIMEOUT)
        assert ended == [True]  # before the fix: False, 20 s later
    finally:
        manager.shutdown(5000)


def test_an_answer_that_does_not_fit_its_result_class_is_a_failure_not_a_payload(
    qtbot, monkeypatch
) -> None:
    """The GUI reads a worker's answer as the job's typed result before any panel sees it: an
    answer of another shape (another DeployLens in the worker interpreter) fails the job with
    that sentence instead of reaching a panel as a dict it would index. The job table's row is
    changed here, in the app process only: the worker still answers the echo."""
    from dataclasses import replace

    from deploylens.core.job_table import JOBS

    row = replace(JOBS["selftest.echo"], result="deploylens.core.validate.result:ValidationResult")
    monkeypatch.setitem(JOBS, "selftest.echo", row)
    failure = _run(qtbot, WorkerJob("selftest.echo", {"a": 1}), "sig_failed")
    assert failure.kind == protocol.INTERNAL
    assert "does not match DeployLens's ValidationResult" in failure.message
    assert "another DeployLens version" in failure.message


def test_the_answer_is_checked_off_the_window_thread(qtbot, monkeypatch) -> None:
    """A 100k-node model's inferred shapes take a second to read strictly: the check runs in a
    thread of its own, and the window only gets the finished result."""
    import threading

    import deploylens.gui.worker_client as client

    seen: list[bool] = []
    real = client.typed_result  # type: ignore[attr-defined]

    def watched(method: str, payload: object) -> object:
        seen.append(threading.current_thread() is threading.main_thread())
        return real(method, payload)

    monkeypatch.setattr(client, "typed_result", watched)
    assert _run(qtbot, WorkerJob("selftest.echo", {"a": 1}))["params"] == {"a": 1}
    assert seen == [False]
