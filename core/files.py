"""Atomic file writes (a crash or a full disk never leaves a half-written file behind) and one
JSON reader whose errors say which file and what it should have been."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from deploylens.core.errors import UserError


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[BinaryIO]:
    """A binary handle on a temp file in ``path``'s folder; on success fsync + rename over
    ``path`` (keeping its mode), on any error the temp file is removed and ``path`` untouched.
    For outputs too large to build in memory first (a 1 GB Chrome trace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(path)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                dir=path.parent)  # fmt: skip
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if path.is_file():  # a regular file's mode is kept; a device's (/dev/zero: 0666) never
            os.chmod(temp, path.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def sweep_stale_temps(path: Path) -> None:
    """Remove ``path``'s temp files left by a process that is gone (``.NAME.<pid>.*.tmp``: a
    killed build left an 8 MiB ``.out.engine.*.tmp`` that no later build removed)."""
    try:
        leftovers = list(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"))
    except OSError:
        return
    for leftover in leftovers:
        pid = leftover.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                leftover.unlink()


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


# Outputs a job builds in several files (a model and its external data) are written into a
# hidden folder beside the final name and moved there only once checked: a killed job leaves no
# half-written or unverified file under the final name, and its folder is swept by the next run.
STAGING_MARK = ".deploylens-partial-"
STALE_AFTER_S = 24 * 3600


def _alive(pid: int) -> bool:
    from deploylens.core.worker.reaper import running

    return running(pid)


def sweep_stale_staging(folder: str | Path) -> list[Path]:
    """Remove staging folders in ``folder`` whose process is gone (or that are a day old)."""
    import shutil
    import time

    removed: list[Path] = []
    try:
        entries = list(Path(folder).glob(f".*{STAGING_MARK}*"))
    except OSError:
        return removed
    for entry in entries:
        pid_text = entry.name.rsplit(STAGING_MARK, 1)[-1].split("-")[0]
        try:
            old = time.time() - entry.lstat().st_mtime > STALE_AFTER_S
        except OSError:
            continue
        if pid_text.isdigit() and _alive(int(pid_text)) and not old:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
        removed.append(entry)
    return removed


@contextlib.contextmanager
def staged_outputs(final: str | Path) -> Iterator[Path]:
    """A fresh hidden folder beside ``final`` to build the output in; removed on the way out,
    whatever happens (``commit_staged`` moves the finished files out first)."""
    import shutil

    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_staging(final.parent)
    stage = Path(
        tempfile.mkdtemp(prefix=f".{final.name}{STAGING_MARK}{os.getpid()}-", dir=final.parent)
    )
    ACTIVE_STAGES.add(stage)
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        ACTIVE_STAGES.discard(stage)


# Staging folders in use by this process: a worker ending abruptly (its app died) removes them
# before it exits, since the job's own ``finally`` never runs then.
ACTIVE_STAGES: set[Path] = set()


def abandon_staged_outputs() -> None:
    import shutil

    for stage in list(ACTIVE_STAGES):
        shutil.rmtree(stage, ignore_errors=True)
        ACTIVE_STAGES.discard(stage)


def atomic_write_bytes(path: str | Path, data: bytes | memoryview) -> None:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    with atomic_open(path) as handle:
        handle.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_cache_file(path: Path, text: str) -> None:
    """A cache written where it belongs whatever holds its place (a folder, a FIFO, a link to
    /dev/zero, a link loop, a dangling link): a link or special file is replaced by the
    atomic rename itself, a folder is moved aside and removed first (the name is ours). The
    cache went to the job's scratch folder before, which vanished with the job: every
    ``support`` then failed naming a worker temp path that "does not exist"."""
    if path.is_dir() and not path.is_symlink():
        aside = path.with_name(f".{path.name}.{os.getpid()}.not-a-file")
        os.replace(path, aside)
        shutil.rmtree(aside, ignore_errors=True)
    atomic_write_text(path, text)


def save_png(image: Any, path: str | Path) -> None:
    """A PIL image as PNG, atomically (``image.save(path)`` writes through a symlink and
    leaves half a file when killed)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    atomic_write_bytes(path, buffer.getvalue())


def output_path(path: str | Path) -> str:
    """An output's absolute path, symlinks *not* followed: the rename of an atomic write then
    replaces a link the user named, never the file behind it (``Path.resolve`` would aim the
    write, and the files written beside it, at the link's target)."""
    return os.path.abspath(os.fspath(path))


def write_json(path: str | Path, data: Any) -> None:
    """A report (benchmark figures, statistics) as indented JSON, atomically, folders made;
    values JSON cannot spell (paths, numpy scalars) are written as their text."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str))


# What a reader takes at most by default: a JSON report or a log far above this is not one.
READ_LIMIT = 1 << 30
SETTINGS_LIMIT = 16 << 20  # a TOML settings or project file


def a_or_an(noun: str) -> str:
    """``"an ONNX model"``, ``"a trace"``: the article the noun is read with."""
    vowel = noun[:1].lower() in "aeio" or noun.startswith(("ONNX", "NVTX"))
    return ("an " if vowel else "a ") + noun


def _size_text(size: int) -> str:
    return f"{size / 2**20:,.1f} MB" if size >= 2**20 else f"{size:,} bytes"


def input_file(path: str | Path, what: str) -> Path:
    """``path`` when it names a regular file that can be opened; otherwise a ``UserError`` that
    says what it is instead. Checked before any read: a FIFO blocks ``open`` forever, a device
    such as ``/dev/zero`` reads until memory runs out, and a symlink loop, a NUL byte or an
    overlong name would surface as an OS error far from the user's words."""
    text = os.fspath(path)
    if "\x00" in text:
        raise UserError(f"{text!r} is not a usable file name: it contains a NUL byte.")
    path = Path(text)
    try:
        info = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise UserError(
                f"{path} is a broken symbolic link (it points to {os.readlink(path)}, "
                "which does not exist)."
            ) from None
        raise UserError(f"{path} does not exist.") from None
    except OSError as exc:
        raise UserError(_os_problem(path, exc, what)) from None
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return path
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    raise UserError(
        f"{path} is {kind}, not {a_or_an(what)} file: DeployLens reads regular files only."
    )


def input_folder(path: str | Path, what: str) -> Path:
    """``path`` when it is a folder (or a regular file, for data given as one ``.npz``);
    otherwise ``input_file``'s sentences."""
    path = Path(path)
    try:
        if path.is_dir():
            return path
    except OSError:
        pass
    return input_file(path, what)


def _os_problem(path: Path, exc: OSError, what: str) -> str:
    """One sentence for an OS error on ``path`` (symlink loop, long name, permissions...)."""
    if exc.errno == errno.ELOOP:
        return f"{path} is a symbolic link loop (it never reaches a file), not {a_or_an(what)}."
    if exc.errno == errno.ENAMETOOLONG:
        return f"{path.name[:60]}… is not a usable file name: it is too long for the system."
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{path} cannot be read (permission denied)."
    if exc.errno == errno.ENOTDIR:
        return f"{path} does not exist (a part of its path is a file, not a folder)."
    return f"{path} cannot be read: {exc.strerror or exc}."


def read_bytes(path: str | Path, what: str, limit: int = READ_LIMIT) -> bytes:
    """A regular file's bytes, at most ``limit`` of them, or a ``UserError`` naming the file."""
    path = input_file(path, what)
    try:
        with open(path, "rb") as handle:
            # read(n) reserves n bytes first: ask for what the file says it holds, plus one
            # byte to notice a file that grew past the limit meanwhile
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(min(size, limit) + 1)
            if len(data) > size and len(data) <= limit:
                data += handle.read(limit + 1 - len(data))
    except OSError as exc:
        raise UserError(_os_problem(path, exc, what)) from None
    if len(data) > limit:
        raise UserError(
            f"{path.name} is larger than {_size_text(limit)}: too large for {a_or_an(what)}."
        )
    return data


def read_text(path: str | Path, what: str, encoding: str = "utf-8", limit: int = READ_LIMIT) -> str:
    """A text file, or a ``UserError``: "X does not exist" / "X is not a readable <what>: why"."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{Path(path).name} is not a readable {what}: byte {exc.start:,} is not {encoding} "
            "text."
        ) from None


def parse_toml(text: str, name: str, what: str) -> dict[str, Any]:
    """TOML text parsed, or one sentence naming ``name``: bad syntax, or arrays and tables
    nested too deeply for the parser (a 5,000-deep array was a RecursionError)."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{name} is not a readable {what}: not valid TOML ({exc}).") from None
    except RecursionError:
        raise UserError(
            f"{name} is not a readable {what}: its TOML is nested too deeply to be one."
        ) from None


def parse_json(text: str | bytes, name: str, what: str) -> Any:
    """JSON text parsed, or one sentence naming ``name``: bad syntax, nesting too deep for the
    parser, or a number with thousands of digits all end the same way."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{name} is not a readable {what}: {exc}.") from None
    except RecursionError:
        raise UserError(
            f"{name} is not a readable {what}: its JSON is nested too deeply to be one."
        ) from None
    except ValueError as exc:  # a number past Python's digit limit
        raise UserError(f"{name} is not a readable {what}: {exc}.") from None


def read_json(path: str | Path, what: str, limit: int = READ_LIMIT) -> Any:
    """Parsed JSON, with ``read_text``'s errors and one for text that is not JSON."""
    return parse_json(read_text(path, what, limit=limit), Path(path).name, what)


def csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
    """Rows as CSV with a header; keys outside ``columns`` are left out."""
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
