"""The real worker subprocess, driven by core/jobs.py (no Qt)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.jobs import Worker, run_job
from deploylens.core.worker import protocol
from deploylens.core.worker.client import CRASHED, PROTOCOL_MISMATCH, START_FAILED, JobFailure


@pytest.fixture
def worker():
    with Worker() as running:
        yield running


def test_handshake_reports_interpreter_and_packages(worker: Worker) -> None:
    hello = worker.session.hello
    assert hello is not None and hello["protocol"] == protocol.PROTOCOL_VERSION
    assert hello["python"]["executable"] == sys.executable
    packages = hello["packages"]
    assert packages["onnx"]["version"]
    # the handshake does not import onnxruntime for its providers (~0.09 s per job); the deep
    # probe (Help → Environment, deploylens env) does
    assert "providers" not in packages["onnxruntime"]
    assert (
        "CPUExecutionProvider"
        in worker.run("env.probe", {})["packages"]["onnxruntime"]["providers"]
    )
    assert packages["tensorrt"]["version"] is None  # cannot be installed here
    assert packages["cuda_driver"]["available"] in (True, False)
    # nor does it ask platform.platform() (a libc scan and a `uname -p` process per worker);
    # the environment report does
    assert "platform" not in hello["python"]
    assert worker.run("env.probe", {})["python"]["platform"]


def test_progress_then_result(worker: Worker) -> None:
    seen: list[tuple[float | None, str]] = []
    logs: list[tuple[str, str]] = []
    payload = worker.run(
        "selftest.progress",
        {"steps": 4},
        on_progress=lambda f, t: seen.append((f, t)),
        on_log=lambda level, text: logs.append((level, text)),
    )
    assert payload == {"steps": 4}
    assert [f for f, _ in seen] == [0.25, 0.5, 0.75, 1.0]
    assert seen[-1][1] == "step 4 of 4"
    assert logs == [("info", "done counting")]


def test_stdout_noise_from_python_and_c_does_not_corrupt_the_channel(worker: Worker) -> None:
    assert worker.run("selftest.noisy") == {"ok": True}
    # The worker is still in sync: the next job answers normally.
    assert worker.run("selftest.echo", {"n": 1})["params"] == {"n": 1}
    # stderr travels on its own pipe and may land after the answer: later jobs' reads feed it
    for _ in range(50):
        tail = worker.session.stderr_tail()
        if "puts() from libc" in tail:
            break
        time.sleep(0.05)
        worker.run("selftest.echo")
    assert "raw bytes on fd 1 from native code" in tail
    assert "stray print from a job" in tail
    assert "puts() from libc" in tail


def test_worker_keeps_imports_warm_across_jobs(worker: Worker) -> None:
    first = worker.run("selftest.echo")["pid"]
    second = worker.run("selftest.echo")["pid"]
    assert first == second == worker.pid


def test_what_a_job_keeps_outlives_it_until_the_next_job_and_is_never_freed_at_exit(
    tmp_path: Path,
) -> None:
    """``ctx.keep``: a value whose destructor is pure cost (a parsed TensorRT network) is not
    freed as its job ends, is freed when the same worker starts another job (never two jobs'
    worth held), and a worker's exit frees nothing."""
    first, second = tmp_path / "first", tmp_path / "second"
    with Worker() as worker:
        assert worker.run("selftest.keep", {"marker": str(first), "check": str(first)}) == {
            "freed_before": False
        }
        assert not first.exists()  # the job ended: what it kept is still held
        answer = worker.run("selftest.keep", {"marker": str(second), "check": str(first)})
        assert answer == {"freed_before": True}  # dropped as the next job started
    assert first.read_text() == "freed"
    assert not second.exists()  # the worker left through os._exit: nothing freed


def test_segfault_is_reported_as_native_crash_with_stderr_tail() -> None:
    with pytest.raises(JobFailure) as caught:
        run_job("selftest.segfault")
    failure = caught.value
    assert failure.kind == CRASHED
    assert "SIGSEGV" in failure.message and "selftest.segfault" in failure.message
    assert "Segmentation fault" in failure.stderr_tail
    assert "segfault_job" in failure.stderr_tail  # faulthandler's Python stack


def test_missing_module_gives_the_exact_pip_line(worker: Worker) -> None:
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.import", {"module": "tensorrt"})
    assert caught.value.kind == protocol.MISSING_DEPENDENCY
    assert caught.value.hint == f"{sys.executable} -m pip install tensorrt"
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.import", {"module": "deploylens_no_such_module.sub"})
    assert caught.value.hint.endswith("-m pip install deploylens-no-such-module")


def test_user_error_has_message_and_no_traceback(worker: Worker) -> None:
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.user_error", {"message": "the shape is wrong", "hint": "use 3"})
    failure = caught.value
    assert (failure.kind, failure.message, failure.hint) == ("user", "the shape is wrong", "use 3")
    assert failure.traceback == ""
    assert failure.is_user_facing


def test_bug_keeps_its_traceback(worker: Worker) -> None:
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.bug")
    assert caught.value.kind == protocol.INTERNAL
    assert "ZeroDivisionError" in caught.value.message
    assert "bug_job" in caught.value.traceback
    assert not caught.value.is_user_facing


def test_unknown_method_is_an_internal_error_naming_the_method(worker: Worker) -> None:
    with pytest.raises(JobFailure, match="no job called 'nope'"):
        worker.run("nope")


def test_cancel_of_a_sleeping_job_is_gone_within_two_seconds() -> None:
    worker = Worker()
    worker.start()
    pid = worker.pid
    assert pid is not None
    started: list[float] = []

    def cancel_soon() -> None:
        time.sleep(0.3)
        started.append(time.monotonic())
        worker.cancel()

    threading.Thread(target=cancel_soon).start()
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.sleep", {"seconds": 60})
    elapsed = time.monotonic() - started[0]
    assert caught.value.kind == protocol.CANCELLED
    assert elapsed < 2.0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # really gone, not orphaned


def test_cooperative_cancel_stops_at_the_next_progress() -> None:
    worker = Worker()
    worker.start()
    threading.Timer(0.3, worker.cancel).start()
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.progress", {"steps": 100, "delay": 0.05})
    assert caught.value.kind == protocol.CANCELLED
    worker.kill()


def test_big_arrays_travel_as_npz_files(worker: Worker) -> None:
    payload = worker.run("selftest.array", {"n": 100_000})
    with np.load(payload["npz"], allow_pickle=False) as data:
        assert data["values"].shape == (100_000,)
        assert data["values"][-1] == 99_999


@pytest.mark.parametrize("end", ["close", "kill"])
def test_the_scratch_folder_goes_with_the_worker(end: str) -> None:
    """CI filled its disk with thousands of worker folders; a killed worker must not leak one."""
    worker = Worker()
    payload = worker.run("selftest.array", {"n": 10})
    folder = Path(payload["npz"]).parent
    assert folder == Path(str(worker.workdir)) and folder.is_dir()
    getattr(worker, end)()
    assert not folder.exists()


def test_interpreter_that_does_not_exist() -> None:
    with pytest.raises(JobFailure) as caught:
        Worker("/nonexistent/bin/python3").start()
    assert caught.value.kind == START_FAILED
    assert "/nonexistent/bin/python3" in caught.value.message


def _start_script(path: Path, source: str) -> JobFailure:
    """Start a script in place of the worker; return the failure the client reports."""
    path.write_text(source)
    worker = Worker()
    worker.argv = [sys.executable, str(path)]
    with pytest.raises(JobFailure) as caught:
        worker.start()
    return caught.value


def test_stale_protocol_version_gets_a_precise_message(tmp_path: Path) -> None:
    # A FAKE worker, named as such: it speaks protocol 0, as an old DeployLens would.
    failure = _start_script(
        tmp_path / "fake_stale_worker.py",
        "import json, sys\n"
        "print(json.dumps({'type': 'hello', 'protocol': 0, 'python': "
        "{'version': '3.11.0', 'version_info': [3, 11, 0]}, 'packages': {}}), flush=True)\n"
        "sys.stdin.read()\n",
    )
    assert failure.kind == PROTOCOL_MISMATCH
    assert "speaks protocol version 0" in failure.message
    assert f"speaks version {protocol.PROTOCOL_VERSION}" in failure.message


def test_interpreter_that_exits_before_hello(tmp_path: Path) -> None:
    failure = _start_script(
        tmp_path / "broken_worker.py",
        "import sys; sys.stderr.write('boom: no site-packages\\n'); sys.exit(7)\n",
    )
    assert failure.kind == START_FAILED
    assert "exit code 7" in failure.message
    assert "boom: no site-packages" in failure.stderr_tail


def test_killed_worker_is_explained_as_probably_out_of_memory() -> None:
    import signal

    worker = Worker()
    worker.start()
    pid = worker.pid
    assert pid is not None
    threading.Timer(0.5, lambda: os.kill(pid, signal.SIGKILL)).start()
    with pytest.raises(JobFailure) as caught:
        worker.run("selftest.sleep", {"seconds": 30})
    assert caught.value.kind == CRASHED
    assert "killed (SIGKILL)" in caught.value.message
    assert "out of memory" in caught.value.hint


def _environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("user", [None, "3"])
def test_numpy_blas_runs_one_thread_in_the_worker_unless_the_user_says(
    user: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenBLAS's spare threads spun after every comparison's dot product (0.6 s of CPU of a
    vit_b_16 validation, no wall time saved): the worker starts with one, or with the user's."""
    if user is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", user)
    with Worker() as running:
        pid = running.run("selftest.echo")["pid"]
        assert pid == running.pid
        assert _environ_of(pid)["OPENBLAS_NUM_THREADS"] == (user or "1")


# numpy imported after the CLI's main ran (``--version`` ends in SystemExit): the threads it
# added to the process, counted in /proc
_THREADS_AFTER_NUMPY = """
import os, sys
if sys.argv[1] == "cli":
    from deploylens.core.cli import main
    try:
        main(["--version"])
    except SystemExit:
        pass
before = len(os.listdir("/proc/self/task"))
import numpy
print(len(os.listdir("/proc/self/task")) - before, os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_the_cli_process_loads_numpy_with_one_blas_thread() -> None:
    """The CLI process (and the GUI it starts) loads numpy with one OpenBLAS thread: its spare
    threads spun ~0.1 s of CPU after the import (``core/blas.py``). As many threads as a plain
    process told ``OPENBLAS_NUM_THREADS=1`` — on a one-core machine every count is equal."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def threads(mode: str, extra: dict[str, str]) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-c", _THREADS_AFTER_NUMPY, mode],
                              env={**env, **extra}, capture_output=True, text=True,
                              timeout=120, check=True)  # fmt: skip
        count, value = done.stdout.splitlines()[-1].split()  # after --version's line
        return int(count), value

    assert threads("cli", {}) == threads("plain", {"OPENBLAS_NUM_THREADS": "1"})
    assert threads("cli", {"OPENBLAS_NUM_THREADS": "2"})[1] == "2"  # the user's own count
