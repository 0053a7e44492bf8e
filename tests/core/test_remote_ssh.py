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
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploylens.core.jobs import Worker
from deploylens.core.worker.client import CRASHED, DISCONNECTED, JobFailure
from deploylens.core.worker.remote import OPTIONS_ENV, code_archive

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))
REQUIRE = os.environ.get("DEPLOYLENS_REQUIRE_SSHD") == "1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A private sshd on 127.0.0.1 and the ssh options that reach it (known host key included)."""
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        if REQUIRE:
            pytest.fail("sshd/ssh are not installed but DEPLOYLENS_REQUIRE_SSHD=1")
        pytest.skip("OpenSSH server not installed (apt install openssh-server)")
    folder = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True
        )
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    port = _free_port()
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
        f"PidFile {folder / 'sshd.pid'}\nLogLevel ERROR\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # its privilege-separation folder
    log = folder / "sshd.log"
    server = subprocess.Popen([SSHD, "-D", "-f", str(folder / "sshd_config"), "-E", str(log)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    else:
        server.kill()
        pytest.fail(f"sshd did not listen: {log.read_text()[-500:] if log.exists() else ''}")
    host_key = (folder / "host_key.pub").read_text().split()[:2]
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    (folder / "empty_known_hosts").write_text("")
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    )
    key = folder / "client_key"
    yield {
        "host": f"{user}@127.0.0.1:{port}",
        "options": f"-i {key} -o UserKnownHostsFile={folder / 'known_hosts'}",
        "unknown": f"-i {key} -o UserKnownHostsFile={folder / 'empty_known_hosts'}",
        "empty_known_hosts": str(folder / "empty_known_hosts"),
    }
    server.terminate()
    server.wait(timeout=10)


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
    shutil.rmtree(Path.home() / ".cache/deploylens/code" / digest, ignore_errors=True)
    monkeypatch.setenv(OPTIONS_ENV, sshd["options"])
    first = Worker(sys.executable, host=sshd["host"])
    hello = first.start()
    first.close()
    second = Worker(sys.executable, host=sshd["host"])
    second.start()
    second.close()
    assert first.code_sent is True and second.code_sent is False  # cached by content hash
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
    assert ours["passed"] and ours["outputs"] == theirs["outputs"]
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
    sessions = _remote_worker_pids("sshd: .*@notty")  # the server's side of this connection

    def drop() -> None:
        for session in sessions:
            os.kill(session, signal.SIGKILL)

    failure = _sleep_failure(worker, drop)
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
    cache = Path.home() / ".cache/deploylens/files"
    sent = [d for d in cache.iterdir() if (d / "cnn.onnx").is_file()]
    assert any((d / "cnn.weights").is_file() for d in sent)  # the external data travelled too
    marker = next(d for d in sent if (d / "cnn.weights").is_file()) / ".complete"
    stamp = marker.stat().st_mtime_ns
    again = cli(sshd, "surgery", str(source), "--fold", "--out", str(out), "--json")
    assert again.returncode == 0 and marker.stat().st_mtime_ns == stamp  # not sent twice
    assert not any((Path.home() / ".cache/deploylens/out").iterdir())  # scratch removed
