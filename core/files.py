"""Atomic file writes (a crash or a full disk never leaves a half-written file behind) and one
JSON reader whose errors say which file and what it should have been."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
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
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
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


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename over ``path``."""
    with atomic_open(path) as handle:
        handle.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, data: Any) -> None:
    """A report (benchmark figures, statistics) as indented JSON, atomically, folders made;
    values JSON cannot spell (paths, numpy scalars) are written as their text."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str))


def read_text(path: str | Path, what: str, encoding: str = "utf-8") -> str:
    """A text file, or a ``UserError``: "X does not exist" / "X is not a readable <what>: why"."""
    path = Path(path)
    try:
        return path.read_text(encoding=encoding)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path.name} is not a readable {what}: {exc}.") from None


def read_json(path: str | Path, what: str) -> Any:
    """Parsed JSON, with ``read_text``'s errors and one for text that is not JSON."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{Path(path).name} is not a readable {what}: {exc}.") from None


def csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
    """Rows as CSV with a header; keys outside ``columns`` are left out."""
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
