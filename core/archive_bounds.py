"""One decompression guard for every zip a user gives (an ``.npz`` of inputs or calibration
data, a ``--weights`` state dict, an ExportedProgram ``.pt2``): each member's inflated size
and ratio, and the archive's in all, checked from the zip's directory before any member is
inflated. A 6 MB ``.npz`` that inflated to 6 GiB took 6.2 GB and 161 s in ``calibrate`` and
then blamed the model; here it is one sentence, unread."""

from __future__ import annotations

import zipfile
from pathlib import Path

from deploylens.core.errors import UserError

MAX_MEMBER_BYTES = 8 << 30
MAX_TOTAL_BYTES = 16 << 30
MAX_RATIO = 100  # weights and arrays are stored raw (1x) or deflate a few x; deflate tops at ~1000x
RATIO_FLOOR_BYTES = 64 << 20  # small members (an all-zero bias, a mask) may deflate far more
# The archive as a whole: a hundred members each under the floor (48 MiB of zeros, 4.9 MB on
# disk in all) inflated to 4.8 GB and killed the worker. The total over the file's own size.
MAX_TOTAL_RATIO = 20
TOTAL_RATIO_FLOOR_BYTES = 256 << 20


def check_inflation(archive: zipfile.ZipFile, name: str, size: int) -> int:
    """The bytes the archive inflates to, or ``UserError`` when a member is too large or
    inflates too far, or the archive does in all (``size``: the file's own bytes)."""
    total = 0
    for info in archive.infolist():
        member = info.filename.replace("\\", "/")
        if info.file_size > MAX_MEMBER_BYTES:
            raise UserError(
                f"{name}: its member {member[:80]!r} would inflate to "
                f"{info.file_size / 2**30:.1f} GiB, more than the {MAX_MEMBER_BYTES >> 30} GiB "
                "DeployLens reads from one member: refused unread."
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            raise UserError(
                f"{name}: its member {member[:80]!r} inflates {ratio:,.0f}x "
                f"({info.compress_size:,} → {info.file_size:,} bytes), which no weights or data "
                "do: a decompression bomb, refused unread."
            )
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise UserError(
            f"{name} would inflate to {total / 2**30:.1f} GiB in all, more than the "
            f"{MAX_TOTAL_BYTES >> 30} GiB DeployLens reads from an archive: refused unread."
        )
    if total > TOTAL_RATIO_FLOOR_BYTES and total > MAX_TOTAL_RATIO * max(size, 1):
        raise UserError(
            f"{name} would inflate to {total / 2**20:,.0f} MiB from {size / 2**20:,.1f} MiB on "
            f"disk ({total / max(size, 1):,.0f}x in all), which no weights or data do: a "
            "decompression bomb, refused unread."
        )
    return total


def check_zip_file(path: Path) -> None:
    """``check_inflation`` for a zip on disk; a file that is no zip is left to its reader."""
    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as archive:
            check_inflation(archive, path.name, path.stat().st_size)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise UserError(f"{path.name} is a damaged archive: {str(exc)[:160]}.") from None
