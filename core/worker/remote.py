"""The worker on another machine, over the system ``ssh``.

Why the system client and not a Python SSH library: it already honours what a user set up —
keys, the agent, ``~/.ssh/config`` (jump hosts, ports, user names), known_hosts — and the worker
only needs a process whose stdin/stdout carry its JSON lines, which ``ssh -T host cmd`` is.
Host keys are checked strictly (``StrictHostKeyChecking=yes``, ``BatchMode=yes``): an unknown host
is a question put to the user, never a key accepted in passing.

The worker's code travels once per content: a tar of ``deploylens.core/plugins/resources`` is
unpacked under ``~/.cache/deploylens/code/<sha256>/`` on the host (written to a partial folder,
renamed when complete), so the next job starts with one round trip. What a job reads and writes
travels in ``transfer.py`` for requests that name their files.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deploylens.core.worker.launch import WORKER_PACKAGES, package_folders

OPTIONS_ENV = "DEPLOYLENS_SSH_OPTIONS"  # extra ssh options, e.g. "-i key -o UserKnownHostsFile=f"
CACHE = ".cache/deploylens/code"  # under the remote $HOME
SSH_FAILED = 255  # ssh's own exit status: connection, authentication or host key
CONNECT_TIMEOUT_S = 15
SHARE_ENV = "DEPLOYLENS_SSH_SHARE"  # "0": one connection per command (no ControlMaster)
PERSIST_S = 60  # a shared connection outlives its last command by this much


_USER = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*\$?")  # what useradd and ssh accept
_SERVER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.%a-z]+\]")  # name, IPv4, [IPv6]


class RemoteError(Exception):
    """The host could not be used: ``kind`` is "host_key", "login", "connect" (unreachable or
    dropped: worth a retry), "python" or "code"."""

    def __init__(self, kind: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.kind, self.message, self.hint = kind, message, hint


@dataclass(frozen=True)
class Host:
    """``user@server``, ``server``, ``user@server:2222`` or an ``~/.ssh/config`` alias."""

    destination: str
    port: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Host:
        """The host, or ValueError saying what is wrong with ``spec`` (Preferences refuses to
        save it; "root@@bad host:99999" was saved and every job failed after)."""
        spec = spec.strip()
        shape = f"{spec!r} is not a host (user@server[:port] or an ~/.ssh/config alias)"
        if not spec or spec.startswith("-"):
            raise ValueError(shape)
        if any(c.isspace() for c in spec):
            raise ValueError(f"{shape}: it has a space")
        destination, port = spec, None
        head, sep, tail = spec.rpartition(":")
        if sep and tail.isdigit() and "]" not in tail:
            destination, port = head, int(tail)
            if not 1 <= port <= 65535:
                raise ValueError(f"{shape}: port {port} is not between 1 and 65535")
        user, at, server = destination.rpartition("@")
        if at and (not user or "@" in user or not _USER.fullmatch(user)):
            raise ValueError(f"{shape}: {user!r} is not a user name")
        if not _SERVER.fullmatch(server):
            raise ValueError(f"{shape}: {server!r} is not a server name or address")
        return cls(destination, port)

    def __str__(self) -> str:
        return self.destination + (f":{self.port}" if self.port else "")


def _options(host: Host) -> list[str]:
    options = [
        "-T",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=3",
    ]  # fmt: skip
    extra = shlex.split(os.environ.get(OPTIONS_ENV, ""))
    port = ["-p", str(host.port)] if host.port else []
    return [*options, *extra, *port]


def ssh_command(host: Host, remote: str) -> list[str]:
    """``ssh`` that never prompts and never accepts an unknown host key, running ``remote``
    over the host's shared connection when there is one (``shared_connection``)."""
    return ["ssh", *_options(host), *shared_connection(host), host.destination, remote]


def _control_path(host: Host) -> Path | None:
    """A private socket per host and ssh options (other options, another connection), in a
    folder only we may enter; None when sharing is off (``DEPLOYLENS_SSH_SHARE=0``)."""
    if os.environ.get(SHARE_ENV) == "0" or not hasattr(os, "getuid"):
        return None
    folder = Path(tempfile.gettempdir()) / f"deploylens-ssh-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = folder.stat()
    except OSError:
        return None
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        return None  # someone else's folder, or one others can enter: no sharing through it
    key = f"{host.destination}\0{host.port}\0{os.environ.get(OPTIONS_ENV, '')}"
    return folder / hashlib.sha256(key.encode()).hexdigest()[:16]


def shared_connection(host: Host) -> list[str]:
    """Options that run a command over one SSH connection kept open for a minute
    (OpenSSH's ControlMaster): a job's probe, worker, sends and fetches then cost one
    handshake instead of one each. The master is started here, detached (``-f``, its output
    to /dev/null — a master holding our pipe would keep a caller waiting for a minute); when
    it cannot start, the command connects by itself and reports why."""
    path = _control_path(host)
    if path is None:
        return []
    use = ["-o", f"ControlPath={path}", "-o", "ControlMaster=no"]
    port = ["-p", str(host.port)] if host.port else []
    null = subprocess.DEVNULL
    try:
        alive = subprocess.run(["ssh", *use, *port, "-O", "check", host.destination],
                               stdin=null, stdout=null, stderr=null, timeout=10)  # fmt: skip
        if alive.returncode == 0:
            return use
        master = ["-o", f"ControlPath={path}", "-o", "ControlMaster=yes",
                  "-o", f"ControlPersist={PERSIST_S}", "-N", "-f"]  # fmt: skip
        started = subprocess.run(["ssh", *_options(host), *master, host.destination],
                                 stdin=null, stdout=null, stderr=null,
                                 timeout=CONNECT_TIMEOUT_S + 10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    return use if started.returncode == 0 else []


def explain_ssh_failure(host: Host, stderr: str) -> RemoteError:
    """ssh's exit 255 as one sentence: the host key question, or why it could not connect."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else "no message"
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return RemoteError(
            "host_key",
            f"{host}'s host key is not one you have accepted, so DeployLens did not connect.",
            f"Run 'ssh {host.destination}' once in a terminal, check the fingerprint it shows with "
            "the server's administrator and accept it; DeployLens never accepts a key itself.",
        )
    if "Permission denied" in text:
        return RemoteError(
            "login",
            f"{host} refused the login ({last}).",
            "DeployLens logs in with your SSH keys or agent, never a password: add your public "
            "key to the server's ~/.ssh/authorized_keys or load it into ssh-agent.",
        )
    if any(sign in text for sign in PERMANENT_SSH_ERRORS):  # trying again cannot help
        return RemoteError(
            "address",
            f"{host} is not an address ssh can use: {last}.",
            "Check the host name, port and user (an ~/.ssh/config alias works too).",
        )
    return RemoteError(
        "connect",
        f"Could not reach {host}: {last}.",
        "Check the host name, the network and that sshd runs there; 'ssh "
        f"{host.destination}' in a terminal shows the same error.",
    )


# ssh's words for an address that no retry can fix: a name that does not resolve, a bad port,
# a user name it refuses to send
PERMANENT_SSH_ERRORS = (
    "Could not resolve hostname",
    "Name or service not known",
    "Bad port",
    "bad port",
    "invalid user name",
    "remote username contains invalid characters",
    "hostname contains invalid characters",
)


def code_archive() -> tuple[str, bytes]:
    """(sha256 of the worker's sources, a tar.gz of them laid out as ``deploylens/<room>/``).
    Byte-identical for identical sources: names sorted, times and owners zeroed."""
    members: list[tuple[str, Path]] = []
    for name, folder in sorted(package_folders().items()):
        if name not in WORKER_PACKAGES:
            continue
        root = Path(folder)
        for path in sorted(root.rglob("*")):
            inside = path.relative_to(root).parts  # caches (__pycache__, .ruff_cache) stay here
            hidden = any(p == "__pycache__" or p.startswith(".") for p in inside)
            if path.is_file() and not hidden and path.suffix != ".pyc":
                members.append((f"{name.replace('.', '/')}/{path.relative_to(root)}", path))
    digest = hashlib.sha256()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for arcname, path in members:
            data = path.read_bytes()
            digest.update(arcname.encode() + b"\0" + data + b"\0")
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return digest.hexdigest()[:20], buffer.getvalue()


def ensure_code(host: Host, timeout: float = 120) -> tuple[str, bool]:
    """The remote folder holding this version of the worker's code, and whether it was sent
    now (False: the host had it). Raises ``RemoteError``."""
    digest, archive = code_archive()
    folder = f"$HOME/{CACHE}/{digest}"
    home, present = cached(host, folder, timeout)
    remote = f"{home}/{CACHE}/{digest}"
    if present:
        return remote, False
    unpack = (
        f'set -e; d="{folder}"; rm -rf "$d.partial"; mkdir -p "$d.partial"; '
        f'tar -xzf - -C "$d.partial"; rm -rf "$d"; mv "$d.partial" "$d"; touch "$d/.complete"'
    )
    sent = run_ssh(host, unpack, archive, timeout)
    if sent.returncode != 0:
        raise RemoteError(
            "code",
            f"Could not unpack the worker's code on {host}: {sent.stderr.decode().strip()[-300:]}",
            "The host needs tar and a writable ~/.cache.",
        )
    return remote, True


def cached(host: Host, folder: str, timeout: float = 60) -> tuple[str, bool]:
    """(the host's $HOME, whether ``folder`` — under it, written as ``$HOME/...`` — holds a
    complete copy): one round trip, shared by the code cache and the file cache."""
    probe = f'test -f "{folder}/.complete" && echo present; echo "HOME=$HOME"'
    result = run_ssh(host, probe, b"", timeout)
    lines = result.stdout.decode().splitlines()
    home = next((line[5:] for line in lines if line.startswith("HOME=")), "")
    return home, "present" in lines


def run_ssh(
    host: Host, remote: str, stdin: bytes, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    try:
        result = subprocess.run(
            ssh_command(host, remote), input=stdin, capture_output=True, timeout=timeout
        )
    except FileNotFoundError:
        raise RemoteError(
            "connect",
            "The 'ssh' command is not installed on this machine.",
            "Install OpenSSH's client (Debian/Ubuntu: apt install openssh-client).",
        ) from None
    except subprocess.TimeoutExpired:
        raise RemoteError(
            "connect", f"{host} did not answer within {timeout:.0f} s.", "Check the network."
        ) from None
    if result.returncode == SSH_FAILED:
        raise explain_ssh_failure(host, result.stderr.decode(errors="replace"))
    return result


def remote_worker_argv(host: Host, python: str, code: str) -> list[str]:
    """The ssh command line whose stdin/stdout are the remote worker's: a private scratch
    folder removed when the worker ends, our packages mapped by path, the chosen Python."""
    if not python or python.startswith("-") or any(ch in python for ch in "\n\r\x00"):
        raise RemoteError(
            "python",
            f"{python[:80]!r} is not an interpreter path (a path or a command name, not an "
            "option or several lines).",
            "Give the host's Python, e.g. --remote-python /usr/bin/python3.",
        )
    packages = {name: f"{code}/{name.replace('.', '/')}" for name in WORKER_PACKAGES}
    boot = f"{code}/deploylens/core/worker/boot.py"
    script = (
        'w=$(mktemp -d "${TMPDIR:-/tmp}/deploylens-worker-XXXXXX") || exit 70; '
        "trap 'rm -rf \"$w\"' EXIT HUP TERM; "
        f"command -v {shlex.quote(python)} >/dev/null 2>&1 || "
        f"{{ printf 'deploylens: no %s on this host\\n' {shlex.quote(python)} >&2; exit 127; }}; "
        f'DEPLOYLENS_WORKDIR="$w" DEPLOYLENS_PACKAGES={shlex.quote(json.dumps(packages))} '
        "PYTHONIOENCODING=utf-8 PYTHONFAULTHANDLER=1 "
        f"{shlex.quote(python)} {shlex.quote(boot)}"
    )
    return ssh_command(host, script)
