"""OpenSSH's server on a loopback port for the remote-worker tests and bench/remote.py: a
throwaway host key, client key and (when root) user, nothing reachable from outside 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def available() -> bool:
    return Path(SSHD).exists() and shutil.which("ssh") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _throwaway_user(folder: Path) -> tuple[str, Path, str]:
    """(user name, home, what it is): a fresh user whose home is under ``folder``, so the
    remote side writes into its own home and nothing of ours. When we are root (CI is): an
    unprivileged user if it can run this interpreter, else — the interpreter lives under
    /root (pyenv), which only root may enter — a second login name for our own uid with its
    own home and key. Otherwise the current user."""
    if os.geteuid() == 0 and shutil.which("useradd"):
        home = folder / "home"
        home.mkdir()
        name = f"dltest{os.getpid() % 100000}"
        # "-p *": no password, yet not locked ("!"), which sshd without PAM would refuse
        base = ["useradd", "-M", "-d", str(home), "-s", "/bin/sh", "-p", "*"]
        if subprocess.run([*base, name], capture_output=True).returncode == 0:
            shutil.chown(home, name, name)
            probe = [sys.executable, "-c", "import onnx, onnxruntime"]
            runs = subprocess.run(
                ["su", "-s", "/bin/sh", name, "-c", " ".join(probe)], capture_output=True
            )
            if runs.returncode == 0:
                return name, home, "unprivileged throwaway"
            subprocess.run(["userdel", name], capture_output=True)
        if subprocess.run([*base, "-o", "-u", "0", "-g", "0", name]).returncode == 0:
            shutil.chown(home, 0, 0)
            return name, home, "throwaway (uid 0: the interpreter is under /root)"
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    )
    return user, Path.home(), "current"


@contextlib.contextmanager
def loopback_sshd() -> Iterator[dict[str, str]]:
    """A private sshd on 127.0.0.1, a throwaway user with a throwaway key, and the ssh options
    that reach it (its host key known). Raises ``RuntimeError`` when it cannot start."""
    # not under pytest's tmp (0700 root): the user reads its authorized_keys and home as itself
    folder = Path(tempfile.mkdtemp(prefix="deploylens-sshd-"))
    folder.chmod(0o755)
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True
        )
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    (folder / "authorized_keys").chmod(0o644)
    user, home, made = _throwaway_user(folder)
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
        raise RuntimeError(f"sshd did not listen: {log.read_text()[-500:] if log.exists() else ''}")
    host_key = (folder / "host_key.pub").read_text().split()[:2]
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    (folder / "empty_known_hosts").write_text("")
    key = folder / "client_key"
    print(f"sshd on 127.0.0.1:{port} as the {made} user {user} (home {home})", file=sys.stderr)
    try:
        yield {
            "host": f"{user}@127.0.0.1:{port}",
            "user": user,
            "home": str(home),
            "server_pid": str(server.pid),
            "options": f"-i {key} -o UserKnownHostsFile={folder / 'known_hosts'}",
            "unknown": f"-i {key} -o UserKnownHostsFile={folder / 'empty_known_hosts'}",
            "empty_known_hosts": str(folder / "empty_known_hosts"),
        }
    finally:
        # every session and what it started (a remote worker, its Ray) goes with the server,
        # even when the test failed mid-job: the next test must not find a leftover worker
        from deploylens.core.worker.reaper import kill_descendants

        kill_descendants(server.pid)
        if made != "current":  # a throwaway home: whatever runs from it is the test's
            subprocess.run(["pkill", "-KILL", "-f", str(home / ".cache" / "deploylens")],
                           capture_output=True)  # fmt: skip
        server.terminate()
        server.wait(timeout=10)
        if made != "current":
            if "uid 0" not in made:
                subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", "-f", user], capture_output=True)  # -f: uid 0 is busy
        shutil.rmtree(folder, ignore_errors=True)


def drop_connections(sshd: dict[str, str]) -> int:
    """Kill the server side of every connection to the test's sshd (its child processes; the
    listener stays): what a network drop looks like to the client. Returns how many."""
    server = int(sshd["server_pid"])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == server:
            children.append(int(stat.parent.name))
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(children)
