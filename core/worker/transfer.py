"""Moving a job's files to and from a remote worker over the same ssh.

A request names its file fields (``Request.FILES``: field → "in" or "out"). An input is sent by
content: ``~/.cache/deploylens/files/<sha256>/<name>`` on the host, written to a partial folder and
renamed when complete, so a file already there is never sent again and an interrupted send
leaves nothing that looks complete (resuming restarts that file). An ONNX model travels with the
external-data files it names. An output is written by the job into a remote scratch folder and
copied back to the path the user asked for, atomically; the result's strings that name remote
paths are rewritten to the local ones.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploylens.core.files import atomic_open
from deploylens.core.worker.remote import Host, RemoteError, cached, run_ssh, ssh_command

FILES_CACHE = ".cache/deploylens/files"
SCRATCH = ".cache/deploylens/out"
CHUNK = 1 << 20
Progress = Callable[[float | None, str], None]


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            while block := handle.read(CHUNK):
                digest.update(block)
    return digest.hexdigest()[:24]


def companions(path: Path) -> list[Path]:
    """The file and, for an ONNX model, the external-data files it names (same folder)."""
    files = [path]
    if path.suffix == ".onnx":
        import onnx

        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception:  # not readable as ONNX: the job will say so; send the file as it is
            return files
        for tensor in model.graph.initializer:
            for entry in tensor.external_data:
                extra = path.parent / entry.value if entry.key == "location" else None
                if extra is not None and extra.is_file() and extra not in files:
                    files.append(extra)
    return files


def push(host: Host, local: Path, progress: Progress | None = None) -> str:
    """The remote path of ``local`` (a file, with its companions), sent unless already there."""
    files = companions(local)
    digest = _digest(files)
    folder = f"$HOME/{FILES_CACHE}/{digest}"
    home, present = cached(host, folder)
    remote = f"{home}/{FILES_CACHE}/{digest}/{local.name}"
    if present:
        return remote
    total = sum(f.stat().st_size for f in files)
    sent = 0
    script = f'set -e; d="{folder}"; rm -rf "$d.partial"; mkdir -p "$d.partial"; cd "$d.partial"; '
    script += "; ".join(
        f"head -c {f.stat().st_size} > {shlex.quote(f.name)}" for f in files
    )  # each file is exactly its size: the stream is their concatenation
    script += '; cd /; rm -rf "$d"; mv "$d.partial" "$d"; touch "$d/.complete"'
    process = subprocess.Popen(
        ssh_command(host, script), stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    try:
        for path in files:
            with path.open("rb") as handle:
                while block := handle.read(CHUNK):
                    process.stdin.write(block)
                    sent += len(block)
                    if progress is not None and total:
                        progress(sent / total, f"sending {local.name} to {host}")
        process.stdin.close()
    except BrokenPipeError:
        pass
    error = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.wait() != 0:
        raise RemoteError(
            "connect" if process.returncode == 255 else "code",
            f"Sending {local.name} to {host} failed after {sent:,} of {total:,} bytes: "
            f"{error.strip()[-300:] or 'no message'}",
            "Run the job again: a file sent completely is never sent twice.",
        )
    return remote


def scratch(host: Host) -> str:
    """A fresh remote folder for one job's outputs."""
    probe = run_ssh(
        host, f'd="$HOME/{SCRATCH}/{uuid.uuid4().hex}"; mkdir -p "$d"; echo "$d"', b"", 60
    )
    return probe.stdout.decode().strip().splitlines()[-1]


def pull(host: Host, remote: str, local: Path) -> bool:
    """Copy ``remote`` to ``local`` atomically; False when the job did not write it."""
    command = ssh_command(host, f"test -f {shlex.quote(remote)} && cat {shlex.quote(remote)}")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        data_seen = False
        try:
            with atomic_open(local) as handle:
                while block := process.stdout.read(CHUNK):
                    handle.write(block)
                    data_seen = True
                if process.wait() != 0:
                    raise FileNotFoundError(remote)  # the temp file goes, nothing is renamed
        except FileNotFoundError:
            return False
    return data_seen or process.returncode == 0


def run_remote_files(
    host: Host,
    params: dict[str, Any],
    files: dict[str, str],
    run: Callable[[dict[str, Any]], Any],
    progress: Progress | None = None,
) -> Any:
    """Send the inputs, point the outputs at a remote scratch folder, run, fetch the outputs
    (and any other file the result names in that folder), and give back local paths."""
    params = dict(params)
    mapping: dict[str, str] = {}  # remote path -> local path
    outputs: list[tuple[str, Path]] = []
    folder = ""
    for field, kind in files.items():
        value = params.get(field)
        if not value:
            continue
        local = Path(value)
        if kind == "in" and local.is_file():
            remote = push(host, local, progress)
            mapping[remote] = value
            params[field] = remote
        elif kind == "out":
            folder = folder or scratch(host)
            remote = f"{folder}/{local.name}"
            mapping[remote] = value
            outputs.append((remote, local))
            params[field] = remote
    result = run(params)
    fetched = {str(local) for remote, local in outputs if pull(host, remote, local)}
    local_dir = outputs[0][1].parent if outputs else Path.cwd()
    for text in _strings(result):  # files the job derived beside its outputs (a steps file)
        if folder and text.startswith(folder + "/") and text not in mapping:
            target = local_dir / Path(text).name
            if pull(host, text, target):
                mapping[text] = str(target)
                fetched.add(str(target))
    if folder:
        run_ssh(host, f"rm -rf {shlex.quote(folder)}", b"", 60)
    return _rewrite(result, mapping)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _rewrite(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {k: _rewrite(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, mapping) for v in value]
    return value
