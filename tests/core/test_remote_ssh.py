"""The worker over SSH, for real: the test starts OpenSSH's server on a loopback port with a
throwaway host key and client key (nothing leaves 127.0.0.1), and the CLI's jobs run through the
system ssh client — the environment probe, a validate, a refused host key, a missing remote
Python, a kill -9 of the remote worker and a dropped connection, each told apart.

Where no sshd is installed the tests skip, except under ``DEPLOYLENS_REQUIRE_SSHD=1`` (make test
sets it: the Makefile installs openssh-server), where that is a failure."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from deploylens.core.jobs import Worker
from deploylens.core.worker.client import CRASHED, DISCONNECTED, JobFailure
from deploylens.core.worker.remote import (
    OPTIONS_ENV,
    SHARE_ENV,
    Host,
    code_archive,
    shared_connection,
    ssh_command,
)
from tests.helpers.figures import assert_same_figures
from tests.helpers.loopback_sshd import drop_connections

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))


def cli(sshd: dict[str, str], *args: str, options: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, OPTIONS_ENV: options or sshd["options"]}
    return subprocess.run(
        [DEPLOYLENS, *args, "--host", sshd["host"], "--remote-python", sys.executable],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_jobs_run_on_the_host_and_its_code_is_sent_once(
    sshd: dict[str, str], samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest, _ = code_archive()
    shutil.rmtree(Path(sshd["home"]) / ".cache/deploylens/code" / digest, ignore_errors=True)
    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    first = Worker(sys.executable, host=sshd["host"])
    hello = first.start()
    first.close()
    second = Worker(sys.executable, host=sshd["host"])
    second.start()
    second.close()
    assert first.code_sent is True and second.code_sent is False  # cached by content hash
    # both workers went over one shared connection (ControlMaster), which is still up
    host = Host.parse(sshd["host"])
    shared = shared_connection(host)
    assert shared and any(o.startswith("ControlPath=") for o in shared)
    control = next(o for o in shared if o.startswith("ControlPath=")).split("=", 1)[1]
    check = subprocess.run(["ssh", *shared, "-p", str(host.port), "-O", "check",
                            host.destination], capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0 and Path(control).stat().st_mode & 0o077 == 0
    monkeypatch.setenv(SHARE_ENV, "0")  # sharing off: a command of its own
    assert not any(o.startswith("ControlPath=") for o in ssh_command(host, "true"))
    monkeypatch.delenv(SHARE_ENV)
    assert hello["python"]["host"] == socket.gethostname() and first.argv[0] == "ssh"
    env = cli(sshd, "env", "--json")
    assert env.returncode == 0, env.stderr[-2000:]
    assert json.loads(env.stdout)["packages"]["onnx"]["version"]
    # a worker job (validate.outputs; inspect runs in the CLI's own process) over ssh gives the
    # local verdict and figures; the same line with an unaccepted host key cannot run at all
    model = str(samples / "small_cnn.dynamo.onnx")
    remote = cli(sshd, "validate", model, "--json")
    local = subprocess.run(
        [DEPLOYLENS, "validate", model, "--json"], capture_output=True, text=True, timeout=300
    )
    assert remote.returncode == local.returncode == 0, remote.stderr[-2000:]
    ours, theirs = json.loads(remote.stdout), json.loads(local.stdout)
    assert ours["passed"]
    assert_same_figures(ours["outputs"], theirs["outputs"])  # two processes: figures, not bits
    refused = cli(sshd, "validate", model, "--json", options=sshd["unknown"])
    assert refused.returncode == 1 and "host key" in refused.stderr


def test_an_unknown_host_key_is_refused_and_never_written(sshd: dict[str, str]) -> None:
    run = cli(sshd, "env", options=sshd["unknown"])
    assert run.returncode == 1 and "host key is not one you have accepted" in run.stderr
    assert "never accepts a key itself" in run.stderr
    assert Path(sshd["empty_known_hosts"]).read_text() == ""  # nothing accepted in passing


def test_a_missing_remote_python_is_said(sshd: dict[str, str]) -> None:
    env = {**os.environ, OPTIONS_ENV: sshd["options"]}
    run = subprocess.run(
        [DEPLOYLENS, "env", "--host", sshd["host"], "--remote-python", "/no/such/python3"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 1
    assert "There is no Python '/no/such/python3'" in run.stderr and "--remote-python" in run.stderr


def _remote_worker_pids(marker: str, argv0: str = "") -> list[int]:
    """Processes whose command line holds ``marker`` (and that run ``argv0``, when given: the
    remote shell and the local ssh carry the boot path in their command lines too)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    pids = []
    for pid in (int(p) for p in found.split()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv0 or (argv[0].decode() == argv0 and argv[1].decode().endswith("boot.py")):
            pids.append(pid)
    return pids


def _sleep_failure(worker: Worker, stop: object) -> JobFailure:
    failures: list[JobFailure] = []

    def job() -> None:
        try:
            worker.run("selftest.sleep", {"seconds": 60})
        except JobFailure as exc:
            failures.append(exc)

    thread = threading.Thread(target=job)
    thread.start()
    time.sleep(1.0)
    stop()  # type: ignore[operator]
    thread.join(timeout=30)
    assert failures, "the job did not fail"
    return failures[0]


def test_kill_9_of_the_remote_worker_and_a_dropped_connection_are_told_apart(
    sshd: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    digest, _ = code_archive()
    marker = f"code/{digest}/deploylens/core/worker/boot.py"
    worker = Worker(sys.executable, host=sshd["host"])
    worker.start()
    (pid,) = _remote_worker_pids(marker, sys.executable)
    failure = _sleep_failure(worker, lambda: os.kill(pid, signal.SIGKILL))
    worker.close()
    assert failure.kind == CRASHED and "SIGKILL" in failure.message

    worker = Worker(sys.executable, host=sshd["host"])
    worker.start()
    failure = _sleep_failure(worker, lambda: drop_connections(sshd))
    worker.close()
    assert failure.kind == DISCONNECTED and "dropped" in failure.message
    assert "run the job again" in failure.hint


def test_a_remote_job_gets_its_inputs_sent_and_its_outputs_back(
    sshd: dict[str, str], samples: Path, tmp_path: Path
) -> None:
    """Surgery over ssh: the model (with its external-data file) goes to the host's content
    cache once, the edited model and its steps file come back to the local --out folder (made
    for them), the report names local paths and the remote scratch folder is gone."""
    import onnx

    model = onnx.load(samples / "small_cnn.torchscript.onnx")
    source = tmp_path / "in" / "cnn.onnx"
    source.parent.mkdir()
    onnx.save(
        model,
        source,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn.weights",
        size_threshold=0,
    )
    out = tmp_path / "back" / "cnn.folded.onnx"
    run = cli(sshd, "surgery", str(source), "--fold", "--out", str(out), "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["model"] == str(source) and report["output"] == str(out)
    assert report["steps_file"] == str(out.with_suffix(".steps.toml"))
    assert report["compare"]["passed"] and report["tensorrt"]["parsed"]
    assert out.is_file() and out.with_suffix(".steps.toml").is_file()
    onnx.checker.check_model(str(out))
    cache = Path(sshd["home"]) / ".cache/deploylens/files"
    sent = [d for d in cache.iterdir() if (d / "cnn.onnx").is_file()]
    assert any((d / "cnn.weights").is_file() for d in sent)  # the external data travelled too
    marker = next(d for d in sent if (d / "cnn.weights").is_file()) / ".complete"
    stamp = marker.stat().st_mtime_ns
    again = cli(sshd, "surgery", str(source), "--fold", "--out", str(out), "--json")
    assert again.returncode == 0 and marker.stat().st_mtime_ns == stamp  # not sent twice
    assert not any((Path(sshd["home"]) / ".cache/deploylens/out").iterdir())  # scratch removed


def local_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DEPLOYLENS, *args], capture_output=True, text=True, timeout=300)


def test_inspect_support_profile_sweep_and_calibrate_run_on_the_host(
    sshd: dict[str, str], samples: Path, tmp_path: Path
) -> None:
    """Each kind of worker job over ssh, with what it reads and writes: a model sent by
    content, a data folder sent whole, a trace file and a sweep folder fetched back, the
    support registries built by the host's interpreter and kept here per host."""
    model = tmp_path / "cnn.onnx"
    shutil.copy(samples / "small_cnn.dynamo.onnx", model)
    # inspect: the host's onnx reads the file; the summary equals the local one
    remote, local = (
        cli(sshd, "inspect", str(model), "--json"),
        local_cli("inspect", str(model), "--json"),
    )
    assert remote.returncode == local.returncode == 0, remote.stderr[-2000:]
    assert_same_figures(json.loads(remote.stdout), json.loads(local.stdout))  # paths: ours too
    # support: ONNX Runtime's kernels as the host's interpreter has them
    remote = cli(sshd, "support", str(model), "--target", "ort-cpu", "--json")
    local = local_cli("support", str(model), "--target", "ort-cpu", "--json")
    assert remote.returncode == local.returncode == 0, remote.stderr[-2000:]
    assert_same_figures(json.loads(remote.stdout)["targets"], json.loads(local.stdout)["targets"])
    # profile: the trace comes back to --out
    trace = tmp_path / "back" / "cnn.trace.json"
    remote = cli(
        sshd,
        "profile",
        str(model),
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--out",
        str(trace),
        "--json",
    )
    assert remote.returncode == 0, remote.stderr[-2000:]
    events = json.loads(trace.read_text())  # Chrome's array form
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert sum(1 for e in events if e.get("ph") == "X") >= 3
    assert sshd["home"] not in remote.stdout  # every path in the report is ours
    # sweep: a folder of traces and tables comes back
    folder = tmp_path / "sweep"
    remote = cli(
        sshd,
        "sweep",
        str(model),
        "--backend",
        "ort",
        "--batch",
        "1,2",
        "--iterations",
        "2",
        "--warmup",
        "1",
        "--out",
        str(folder),
        "--json",
    )
    assert remote.returncode == 0, remote.stderr[-2000:]
    assert (folder / "sweep.json").is_file() and len(list(folder.glob("*.json"))) >= 3
    assert sshd["home"] not in remote.stdout and not list(folder.glob(".incoming-*"))
    # calibrate: a data folder goes whole; the default output lands beside the local model
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    for i in range(8):
        np.save(data / f"s{i}.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    remote = cli(sshd, "calibrate", str(model), "--data", str(data), "--json")
    assert remote.returncode == 0, remote.stderr[-2000:]
    report = json.loads(remote.stdout)
    assert (tmp_path / "cnn.entropy.qdq.onnx").is_file()
    assert str(data) in json.dumps(report) and sshd["home"] not in remote.stdout
    onnx.checker.check_model(str(tmp_path / "cnn.entropy.qdq.onnx"))


def test_a_send_cut_off_midway_is_disconnected_and_resumes_where_it_stopped(
    sshd: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deploylens.core.worker.remote import Host
    from deploylens.core.worker.transfer import push

    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    host = Host.parse(sshd["host"])
    big = tmp_path / "weights.bin"
    big.write_bytes(np.random.default_rng(1).bytes(48 << 20))
    dropped: list[int] = []

    def cut_at_40_percent(fraction: float | None, text: str) -> None:
        if fraction is not None and fraction > 0.4 and not dropped:
            dropped.append(drop_connections(sshd))

    with pytest.raises(JobFailure) as failure:
        push(host, big, cut_at_40_percent)
    assert failure.value.kind == DISCONNECTED and "resumes where it stopped" in failure.value.hint
    assert dropped and dropped[0] >= 1
    cache = Path(sshd["home"]) / ".cache/deploylens/files"
    (partial,) = cache.glob("*.partial")
    arrived = -1
    while arrived != (arrived := (partial / "weights.bin").stat().st_size):
        time.sleep(0.3)  # the host's side drains what was in flight before it notices
    assert 0 < arrived < big.stat().st_size  # what arrived stays, and is not taken as complete
    again = push(host, big)
    assert again.sent == big.stat().st_size - arrived  # only the missing tail went
    landed = Path(again.remote)
    assert landed.read_bytes() == big.read_bytes() and not partial.exists()
    assert push(host, big).sent == 0  # complete now: never sent again


def test_a_fetch_cut_off_midway_is_disconnected_and_writes_nothing(
    sshd: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's output is on the host; the connection drops while it comes back: the
    failure is ``disconnected`` and no file, whole or partial, is under the asked name."""
    from deploylens.core.worker.remote import Host, run_ssh
    from deploylens.core.worker.transfer import pull, pull_folder, scratch

    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    host = Host.parse(sshd["host"])
    folder = scratch(host)
    made = f"mkdir {folder}/traces && head -c 200000000 /dev/urandom > {folder}/out.bin"
    run_ssh(host, f"{made} && cp {folder}/out.bin {folder}/traces/a.bin", b"", 120)
    for fetch, target in ((pull, tmp_path / "out.bin"), (pull_folder, tmp_path / "traces")):
        remote = f"{folder}/{target.name}"
        done = threading.Event()

        def cut_when_data_flows(done: threading.Event = done) -> None:
            while not done.is_set():
                written = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
                if written > 10 << 20:
                    drop_connections(sshd)
                    return
                time.sleep(0.01)

        watcher = threading.Thread(target=cut_when_data_flows)
        watcher.start()
        with pytest.raises(JobFailure) as failure:
            fetch(host, remote, target)
        done.set()
        watcher.join()
        assert failure.value.kind == DISCONNECTED and "nothing was written" in failure.value.message
        assert not (tmp_path / "out.bin").exists() and not (tmp_path / "traces" / "a.bin").exists()
        assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no temp file left either
    assert pull(host, f"{folder}/out.bin", tmp_path / "whole.bin")  # the next try works
    assert (tmp_path / "whole.bin").stat().st_size == 200_000_000
    assert not pull(host, f"{folder}/never-written.bin", tmp_path / "never.bin")
    run_ssh(host, f"rm -rf {folder}", b"", 60)


def test_a_cancel_over_ssh_is_a_cancel_and_a_killed_client_leaves_no_remote_worker(
    sshd: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancel reads as locally; when the local ssh is killed (the escalation's last step, or
    the app dying), the remote worker sees its stdin close and is gone within seconds — it
    never keeps a GPU busy for nobody."""
    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    digest, _ = code_archive()
    marker = f"code/{digest}/deploylens/core/worker/boot.py"
    worker = Worker(sys.executable, host=sshd["host"])
    worker.start()
    failure = _sleep_failure(worker, worker.cancel)
    worker.close()
    assert failure.kind == "cancelled"
    worker = Worker(sys.executable, host=sshd["host"])
    worker.start()
    (pid,) = _remote_worker_pids(marker, sys.executable)
    thread = threading.Thread(target=lambda: _quiet(worker))
    thread.start()
    time.sleep(1.0)
    worker.kill()  # SIGKILL to the local ssh: no goodbye reaches the host
    thread.join(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), "the remote worker outlived its connection"


def _quiet(worker: Worker) -> None:
    try:
        worker.run("selftest.sleep", {"seconds": 60})
    except JobFailure:
        pass


def _drop_once_while_sending(sshd: dict[str, str], over_bytes: int) -> threading.Thread:
    """A thread that drops every connection once a partial send on the host passes
    ``over_bytes`` (the network failing mid-transfer)."""
    cache = Path(sshd["home"]) / ".cache/deploylens/files"

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            partial = sum(
                f.stat().st_size for d in cache.glob("*.partial") for f in d.iterdir()
            ) if cache.exists() else 0  # fmt: skip
            if partial > over_bytes:
                drop_connections(sshd)
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_connection_dropped_mid_transfer_is_tried_once_more_and_the_job_completes(
    sshd: dict[str, str], tmp_path: Path
) -> None:
    """validate over ssh with 64 MB of weights; the network drops while they travel: the CLI
    says so, tries once more (the send resumes), and gives the local verdict."""
    from tests.helpers.onnx_models import external_data_matmul

    model = external_data_matmul(tmp_path, megabytes=64)
    watcher = _drop_once_while_sending(sshd, 16 << 20)
    remote = cli(sshd, "validate", str(model), "--json")
    watcher.join(timeout=5)
    assert remote.returncode == 0, remote.stderr[-2000:]
    assert "dropped" in remote.stderr and "Trying once more." in remote.stderr
    local = local_cli("validate", str(model), "--json")
    assert_same_figures(json.loads(remote.stdout)["outputs"], json.loads(local.stdout)["outputs"])


def test_hostile_interpreter_paths_and_file_names_run_nothing_on_either_side(
    sshd: dict[str, str], samples: Path, tmp_path: Path
) -> None:
    """Every value that reaches a remote shell is quoted: interpreter paths and model names
    with a quote, a newline, a leading '-' or ``$()`` run nothing (no marker here or on the
    host, which is this machine); odd file names still validate; an address ssh cannot use is
    said once, not retried."""
    marker = tmp_path / "ran.marker"
    env = {**os.environ, OPTIONS_ENV: sshd["options"]}
    pythons = [f"/x'; touch {marker}; '", f"/x\ntouch {marker}", "-c", f"$(touch {marker})",
               f"`touch {marker}`"]  # fmt: skip
    for python in pythons:
        run = subprocess.run(
            [DEPLOYLENS, "env", "--host", sshd["host"], "--remote-python", python],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert run.returncode == 1, (python, run.stderr)
        assert "Traceback" not in run.stderr, run.stderr
    names = ["-x.onnx", "a'b.onnx", f"$(touch {marker}).onnx".replace("/", "_"), "new\nline.onnx",
             "sp ace;.onnx"]  # fmt: skip
    for name in names:
        model = tmp_path / name
        shutil.copy(samples / "small_cnn.dynamo.onnx", model)
        remote = cli(sshd, "validate", str(model), "--json")
        assert remote.returncode == 0, (name, remote.stderr[-2000:])
        assert json.loads(remote.stdout)["passed"]
    assert not marker.exists(), "a hostile value ran on one side"
    bad = subprocess.run(
        [DEPLOYLENS, "env", "--host", "someone@no-such-host.invalid", "--remote-python", "python3"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert bad.returncode == 1 and "Trying once more" not in bad.stderr, bad.stderr
    assert "not an address ssh can use" in bad.stderr
