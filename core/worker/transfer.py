"""Moving a job's files to and from a remote worker over the same ssh.

A request names its file fields (``Request.FILES``: a field, dotted into nested requests, →
"in", "out", "outdir" or "inout"). An input — a file, an ONNX model with the external-data
files it names, or a folder — is sent by content: ``~/.cache/deploylens/files/<sha256>/<name>``
on the host. It is written into ``<sha256>.partial`` and renamed when every file has its size
and its sha256 (checked there with ``sha256sum``), so a file already there is never sent again,
an interrupted send resumes where it stopped, and nothing half-sent ever looks complete.

An output is written by the job into a remote scratch folder and copied back to the path the
user asked for atomically (a folder: file by file, each renamed into place); the result's
strings that name remote paths are rewritten to local ones. A connection that drops while
sending or fetching is ``disconnected`` (run again: what arrived stays), never a report that
names a file which is not there.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.files import atomic_open
from deploylens.core.worker.client import DISCONNECTED, JobFailure
from deploylens.core.worker.remote import SSH_FAILED, Host, RemoteError, run_ssh, ssh_command

FILES_CACHE = ".cache/deploylens/files"
SCRATCH = ".cache/deploylens/out"
CHUNK = 1 << 20
INCOMPLETE = 75  # the send script's exit status when a file is still short (resume next time)
Progress = Callable[[float | None, str], None]


@dataclass
class Bundle:
    """One input as it travels: its files, where each lands under the digest folder."""

    name: str  # what the job is given under the digest folder (the file or folder name)
    files: list[tuple[Path, str, int, str]]  # local file, relative path, size, sha256
    digest: str

    @property
    def total(self) -> int:
        return sum(size for _, _, size, _ in self.files)


@dataclass
class Pushed:
    remote: str  # the path the job is given on the host
    sent: int  # bytes sent now (0: the host had it)
    total: int
    files: dict[str, str]  # each remote file → its local file (a model's external data too)


def companions(path: Path) -> list[Path]:
    """The file and, for an ONNX model, the external-data files it names (same folder: the
    model-folder guard refuses anything else before a byte is sent)."""
    files = [path]
    if path.suffix.lower() == ".onnx":
        import onnx

        from deploylens.core.guard import all_tensors, check_model_file

        check_model_file(path)
        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception:  # not readable as ONNX: the job will say so; send the file as it is
            return files
        for tensor in all_tensors(model):
            for entry in tensor.external_data:
                extra = path.parent / entry.value if entry.key == "location" else None
                if extra is not None and extra.is_file() and extra not in files:
                    files.append(extra)
    return files


def bundle(local: Path) -> Bundle:
    """What sending ``local`` means: a folder's regular files (links skipped), or a file and its
    companions; the digest covers every relative path and every byte."""
    if local.is_dir():
        members = [
            (path, f"{local.name}/{path.relative_to(local).as_posix()}")
            for path in sorted(local.rglob("*"))
            if path.is_file() and not path.is_symlink()
        ]
    else:
        members = [(path, path.name) for path in companions(local)]
    digest = hashlib.sha256()
    files = []
    for path, relative in members:
        one = hashlib.sha256()
        size = 0
        with path.open("rb") as handle:
            while block := handle.read(CHUNK):
                one.update(block)
                size += len(block)
        digest.update(f"{relative}\0{size}\0{one.hexdigest()}\0".encode())
        files.append((path, relative, size, one.hexdigest()))
    return Bundle(local.name, files, digest.hexdigest()[:24])


def _probe(host: Host, folder: str) -> tuple[str, bool, dict[str, int]]:
    """($HOME, complete?, sizes of the files a previous send left in the partial folder)."""
    script = (
        f'd="{folder}"; if test -f "$d/.complete"; then echo present; '
        'elif test -d "$d.partial"; then (cd "$d.partial" && find . -type f -printf "%s %P\\n"); '
        'fi; echo "HOME=$HOME"'
    )
    lines = run_ssh(host, script, b"", 60).stdout.decode(errors="replace").splitlines()
    home = next((line[5:] for line in lines if line.startswith("HOME=")), "")
    sizes: dict[str, int] = {}
    for line in lines:
        size, _, name = line.partition(" ")
        if size.isdigit() and name:
            sizes[name] = int(size)
    return home, "present" in lines, sizes


def push(host: Host, local: Path, progress: Progress | None = None) -> Pushed:
    """Send ``local`` unless the host has it; resume a send that was cut off. Raises
    ``JobFailure`` (disconnected) when the connection drops, ``RemoteError`` otherwise."""
    item = bundle(local)
    folder = f"$HOME/{FILES_CACHE}/{item.digest}"
    home, present, partial = _probe(host, folder)
    remote = f"{home}/{FILES_CACHE}/{item.digest}/{item.name}"
    where = {
        f"{home}/{FILES_CACHE}/{item.digest}/{rel}": str(path) for path, rel, _, _ in item.files
    }
    if present:
        return Pushed(remote, 0, item.total, where)
    plan = []  # (local, relative, size, offset)
    for path, relative, size, _ in item.files:
        have = partial.get(relative, 0)
        plan.append((path, relative, size, have if have <= size else 0))
    steps = [f'set -e; d="{folder}"; mkdir -p "$d.partial"; cd "$d.partial"']
    folders = sorted({os.path.dirname(rel) for _, rel, _, _ in plan} - {""})
    # every name as ./NAME, quoted: a leading '-' is never an option, a newline never a line
    if folders:
        steps.append("mkdir -p -- " + " ".join(shlex.quote(f"./{f}") for f in folders))
    for _, relative, size, offset in plan:  # the stream is the files' missing tails, in order
        redirect = ">>" if offset else ">"
        steps.append(f"head -c {int(size - offset)} {redirect} {shlex.quote(f'./{relative}')}")
    for _, relative, size, _ in plan:  # short: the stream was cut; keep it for the next send
        steps.append(
            f'test "$(stat -c %s -- {shlex.quote(f"./{relative}")})" -eq {int(size)} '
            f"|| exit {INCOMPLETE}"
        )
    for _, relative, _, sha in item.files:  # each file's sum, read from stdin (no name parsed)
        steps.append(
            f'test "$(sha256sum < {shlex.quote(f"./{relative}")})" = {shlex.quote(f"{sha}  -")} '
            f'|| {{ echo "checksum mismatch" >&2; cd /; rm -rf "$d.partial"; exit 3; }}'
        )
    steps.append('cd /; rm -rf "$d"; mv "$d.partial" "$d"; touch "$d/.complete"')
    total = item.total
    sent = sum(offset for _, _, _, offset in plan)  # already there from an earlier send
    resumed = sent
    try:
        process = subprocess.Popen(
            ssh_command(host, "; ".join(steps)), stdin=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except FileNotFoundError:
        raise RemoteError("connect", "The 'ssh' command is not installed.", "") from None
    assert process.stdin is not None and process.stderr is not None
    try:
        for path, _, size, offset in plan:
            with path.open("rb") as handle:
                handle.seek(offset)
                left = size - offset
                while left > 0 and (block := handle.read(min(CHUNK, left))):
                    process.stdin.write(block)
                    left -= len(block)
                    sent += len(block)
                    if progress is not None and total:
                        progress(sent / total, f"sending {local.name} to {host}")
        process.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass
    except BaseException:  # cancelled from the progress callback, interrupted: no ssh left over
        process.kill()
        process.wait()
        raise
    error = process.stderr.read().decode(errors="replace").strip()
    code = process.wait()
    if code == 0:
        return Pushed(remote, sent - resumed, total, where)
    if code in (SSH_FAILED, INCOMPLETE) or code < 0:
        raise JobFailure(
            DISCONNECTED,
            f"The connection to {host} dropped while sending {local.name} "
            f"({sent:,} of {total:,} bytes arrived).",
            "Run the job again: the send resumes where it stopped.",
        )
    raise RemoteError(
        "code",
        f"Sending {local.name} to {host} failed: {error[-300:] or f'exit status {code}'}",
        "Check the space and permissions under ~/.cache/deploylens on the host."
        if code != 3
        else "The copy on the host did not match (checksum); run the job again.",
    )


def scratch(host: Host) -> str:
    """A fresh remote folder for one job's outputs."""
    probe = run_ssh(
        host, f'd="$HOME/{SCRATCH}/{uuid.uuid4().hex}"; mkdir -p "$d"; echo "$d"', b"", 60
    )
    result: str = probe.stdout.decode().strip().splitlines()[-1]
    return result


def _dropped(host: Host, remote: str, local: Path) -> JobFailure:
    return JobFailure(
        DISCONNECTED,
        f"The job finished on {host}, but the connection dropped while copying {remote} back "
        f"to {local}; nothing was written there.",
        "Run the job again.",
    )


def pull(host: Host, remote: str, local: Path) -> bool:
    """Copy the file ``remote`` to ``local`` atomically; False when the job did not write it.
    Raises ``JobFailure`` (disconnected) when the connection drops: a partial copy never
    reaches ``local``."""
    missing = 3
    quoted = shlex.quote(remote)
    command = ssh_command(host, f"test -f {quoted} || exit {missing}; cat {quoted}")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        try:
            with atomic_open(local) as handle:
                while block := process.stdout.read(CHUNK):
                    handle.write(block)
                if process.wait() != 0:
                    raise _Abandon  # the temp file goes, nothing is renamed
        except _Abandon:
            pass
    if process.returncode == 0:
        return True
    if process.returncode == missing:
        return False
    raise _dropped(host, remote, local)


def pull_folder(host: Host, remote: str, local: Path) -> bool:
    """Copy the folder ``remote`` into ``local`` (made if needed): each file lands complete and
    under its final name only (a tar stream unpacked in a temporary folder beside it, each file
    then renamed into place). False when the job wrote no such folder."""
    parent, name = os.path.split(remote.rstrip("/"))
    missing = 3
    command = ssh_command(
        host,
        f"test -d {shlex.quote(remote)} || exit {missing}; "
        f"tar -cf - -C {shlex.quote(parent)} -- {shlex.quote(name)}",
    )
    local.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local, prefix=".incoming-") as temp:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            assert process.stdout is not None
            try:
                with tarfile.open(fileobj=process.stdout, mode="r|") as tar:
                    tar.extractall(temp, filter="data")  # no absolute paths, links out, devices
            except tarfile.TarError:
                pass  # a cut stream; the exit status says which
            process.stdout.read()
        if process.returncode == missing:
            return False
        if process.returncode != 0:
            raise _dropped(host, remote, local)
        root = Path(temp) / name
        for path in sorted(root.rglob("*")):
            if path.is_file():
                target = local / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
    return True


class _Abandon(Exception):
    pass


def _get(params: dict[str, Any], field: str) -> Any:
    value: Any = params
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _set(params: dict[str, Any], field: str, value: Any) -> None:
    *parents, last = field.split(".")
    target = params
    for part in parents:
        target = target[part]
    target[last] = value


class RemoteFiles:
    """One job's files on the host: ``send`` its inputs and point its outputs at a scratch
    folder (before the job), ``fetch`` the outputs and rewrite the result (after), ``clean``
    the scratch folder (always). The CLI runs the three around ``Worker.run``; the GUI runs
    the slow ones in a thread around its ``QProcess``."""

    def __init__(
        self,
        host: Host,
        files: dict[str, str],
        progress: Progress | None = None,
        result_files: tuple[str, ...] | None = None,
    ):
        self.host, self.files, self.progress = host, files, progress
        # the result's declared file fields (``Result.FILES``); None: a job answering a plain
        # dict, whose every string is looked at for a path in the scratch folder
        self.result_files = result_files
        self.mapping: dict[str, str] = {}  # remote path -> local path
        self.outputs: list[tuple[str, Path, bool]] = []  # remote, local, is a folder
        self.folder = ""

    def send(self, params: dict[str, Any]) -> dict[str, Any]:
        """The params the remote job is given: inputs sent (or found there), outputs redirected."""
        import copy

        params = copy.deepcopy(params)
        host = self.host
        for field, kind in self.files.items():
            value = _get(params, field)
            if not value or not isinstance(value, str):
                continue
            local = Path(value)
            if kind in ("out", "outdir", "inout"):
                self.folder = self.folder or scratch(host)
            if kind in ("in", "inout") and (local.is_file() or local.is_dir()):
                pushed = push(host, local, self.progress)
                remote = pushed.remote
                self.mapping.update(pushed.files)
                if kind == "inout":  # the job updates it in place: give it its own copy
                    copy_to = f"{self.folder}/{local.name}"
                    run_ssh(host, f"cp -- {shlex.quote(remote)} {shlex.quote(copy_to)}", b"", 60)
                    remote = copy_to
                    self.outputs.append((remote, local, False))
                self.mapping[remote] = value
                _set(params, field, remote)
            elif kind in ("out", "outdir", "inout"):
                remote = f"{self.folder}/{local.name}"
                self.mapping[remote] = value
                self.outputs.append((remote, local, kind == "outdir"))
                _set(params, field, remote)
        return params

    def fetch(self, result: Any) -> Any:
        """Copy the outputs back (and files the result names in the scratch folder: a steps
        file), and return the result with local paths. Raises ``JobFailure`` (disconnected)."""
        host, folder = self.host, self.folder
        for remote, local, is_folder in self.outputs:
            (pull_folder if is_folder else pull)(host, remote, local)
        first_file = next((local for _, local, is_dir in self.outputs if not is_dir), None)
        local_dir = first_file.parent if first_file else Path.cwd()
        named = (
            _strings(result) if self.result_files is None else _declared(result, self.result_files)
        )
        for text in named:
            if not folder or not text.startswith(folder + "/") or text in self.mapping:
                continue
            if any(text.startswith(r + "/") for r, _, is_dir in self.outputs if is_dir):
                continue  # fetched with its folder; the rewrite maps it
            target = local_dir / Path(text).name
            if pull(host, text, target):
                self.mapping[text] = str(target)
        return _rewrite(result, self.mapping)

    def clean(self) -> None:
        if self.folder:
            try:
                run_ssh(self.host, f"rm -rf -- {shlex.quote(self.folder)}", b"", 60)
            except RemoteError:
                pass  # the host is gone; its scratch folder goes with the next clean-up


def run_remote_files(
    host: Host,
    params: dict[str, Any],
    files: dict[str, str],
    run: Callable[[dict[str, Any]], Any],
    progress: Progress | None = None,
    result_files: tuple[str, ...] | None = None,
) -> Any:
    """Send the inputs, run, fetch the outputs, give back local paths; scratch removed."""
    job = RemoteFiles(host, files, progress, result_files)
    try:
        return job.fetch(run(job.send(params)))
    finally:
        job.clean()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _declared(result: Any, fields: tuple[str, ...]) -> list[str]:
    """The paths in a result's declared file fields (dotted; a list of paths counts)."""
    found: list[str] = []
    for field in fields:
        value = result
        for part in field.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        found.extend(_strings(value))
    return found


def _rewrite(value: Any, mapping: dict[str, str]) -> Any:
    """Every remote path in the result, also inside sentences and under sent or fetched
    folders, as the local path it stands for (longest first: a folder's files before it)."""
    if isinstance(value, str):
        for remote in sorted(mapping, key=len, reverse=True):
            if remote in value:
                value = value.replace(remote, mapping[remote])
        return value
    if isinstance(value, dict):
        return {k: _rewrite(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, mapping) for v in value]
    return value
