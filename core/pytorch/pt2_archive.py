"""Open a ``torch.export.save`` archive (``.pt2``) without ever unpickling anything.

``torch.export.load`` runs pickles from an archive in four places: weights and tensor constants
whose config says ``use_pickle: true`` (``torch.load(weights_only=False)``), opaque constants
(``pickle.loads``), the sample inputs (``weights_only=True`` first, then a silent fallback to
``weights_only=False``) and the legacy (< 2.7) layout. A crafted archive therefore runs its
``__reduce__`` on open. Here the archive is audited first — from the zip's entries and its JSON
configs, no pickle touched — and refused with a sentence naming what would have run; then it is
loaded from the same bytes with ``torch.load`` forced to ``weights_only=True`` and ``pickle.loads``
disabled, so anything the audit missed fails instead of running.
"""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deploylens.core.archive_bounds import check_inflation
from deploylens.core.errors import UserError
from deploylens.core.files import read_bytes

# Constants stored as custom (TorchBind) or opaque Python objects: both load through a pickler.
PICKLED_CONSTANT_PREFIXES = ("custom_obj_", "opaque_obj_")
MAX_ARCHIVE_BYTES = 16 << 30
# torch.export.load dlopens the AOTInductor packages it finds (data/aotinductor/<name>/*.so):
# a library's constructor runs before any error. Native code, or source to compile, never loads.
NATIVE_SUFFIXES = (
    ".so",
    ".dll",
    ".dylib",
    ".pyd",
    ".o",
    ".obj",
    ".a",
    ".lib",
    ".cpp",
    ".cc",
    ".cxx",
    ".c",
    ".h",
    ".hpp",
    ".cu",
    ".cuh",
    ".cubin",
    ".ptx",
    ".fatbin",
    ".hsaco",
    ".spv",
    ".py",
)
NATIVE_FOLDERS = ("aotinductor",)


class _Refused(Exception):
    """A pickle the audit did not catch was about to be loaded."""


def audit(data: bytes, name: str) -> None:
    """Raise ``UserError`` when loading the archive ``data`` would unpickle anything, or when
    it is damaged (a bad CRC, a truncated entry, a config that is not UTF-8 JSON)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        raise UserError(
            f"{name} is not an ExportedProgram archive (torch.export.save writes a zip file)."
        ) from None
    try:
        _audit_members(archive, name, len(data))
        _inflate_within_headers(archive, name)
        _audit_archive(archive, name)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RecursionError) as exc:
        reason = str(exc)[:160] or type(exc).__name__
        raise UserError(f"{name} is a damaged archive: {reason}.") from None
    finally:
        archive.close()


def _audit_members(archive: zipfile.ZipFile, name: str, size: int) -> None:
    """Refuse native code and decompression bombs from the zip's directory alone: a member
    too large or inflating too far, and the archive too large or inflating too far in all."""
    for info in archive.infolist():
        member = info.filename.replace("\\", "/")
        parts = [p for p in member.lower().split("/") if p]
        if any(p in NATIVE_FOLDERS for p in parts) or member.lower().endswith(NATIVE_SUFFIXES):
            raise UserError(
                f"{name} cannot be opened safely: it carries native code or source to compile "
                f"({member[:120]!r}), which torch.export.load would load and run. "
                "DeployLens refuses archives with compiled or compilable members.",
                "Re-save the program with torch.export.save (no AOTInductor package), or give "
                "FILE.py:factory.",
            )
    check_inflation(archive, name, size)  # the bombs: one guard for every zip we read


def _inflate_within_headers(archive: zipfile.ZipFile, name: str) -> None:
    """Every member inflated once, never past the size its header declares (zipfile stops
    there) and checked against its CRC: a member that under-declares its size is refused
    here, at its declared size, before torch's own reader inflates it without that bound."""
    for info in archive.infolist():
        with archive.open(info) as member:
            while member.read(1 << 22):
                pass


def _audit_archive(archive: zipfile.ZipFile, name: str) -> None:
    names = set(archive.namelist())
    formats = [n for n in names if n.endswith("archive_format")]
    if not formats:
        legacy = any(n.endswith("serialized_exported_program.json") for n in names)
        raise UserError(
            f"{name} is "
            + (
                "an ExportedProgram in the legacy (torch < 2.7) layout, whose weights load "
                "only by unpickling"
                if legacy
                else "a zip archive but not an ExportedProgram (no archive_format entry)"
            )
            + ": DeployLens refuses to run pickled code.",
            "Re-save it with torch.export.save from torch ≥ 2.7, or give FILE.py:factory.",
        )
    prefix = formats[0].removesuffix("archive_format")
    if archive.read(formats[0]).strip() != b"pt2":
        raise UserError(f"{name} is not a PT2 archive (its archive_format is not 'pt2').")
    models = [
        n.removeprefix(prefix + "models/").removesuffix(".json")
        for n in names
        if n.startswith(prefix + "models/") and n.endswith(".json")
    ]
    if not models:
        raise UserError(f"{name} holds no exported program (no models/*.json entry).")
    for model in models:
        _audit_model(archive, names, prefix, model, name)


def _audit_model(
    archive: zipfile.ZipFile, names: set[str], prefix: str, model: str, name: str
) -> None:
    for kind in ("weights", "constants"):
        legacy = f"{prefix}data/{kind}/{model}.pt"
        if legacy in names:
            raise _pickle_refusal(name, f"its {kind} are one pickled file ({model}.pt)")
        config_name = f"{prefix}data/{kind}/{model}_{kind}_config.json"
        if config_name not in names:
            continue
        try:
            config = json.loads(archive.read(config_name)).get("config", {})
        except (ValueError, AttributeError, RecursionError):
            raise UserError(f"{name}: its {kind} config is not readable JSON.") from None
        if not isinstance(config, dict):
            raise UserError(f"{name}: its {kind} config is not a JSON object.")
        for fqn, entry in config.items():
            if not isinstance(entry, dict):
                raise UserError(f"{name}: the {kind} entry '{fqn}' is not a JSON object.")
            if entry.get("use_pickle"):
                raise _pickle_refusal(name, f"its {kind[:-1]} '{fqn}' is stored as a pickle")
            if str(entry.get("path_name", "")).startswith(PICKLED_CONSTANT_PREFIXES):
                raise _pickle_refusal(name, f"its constant '{fqn}' is a pickled Python object")
    inputs = f"{prefix}data/sample_inputs/{model}.pt"
    if inputs in names:
        _check_weights_only(archive.read(inputs), name)


def _check_weights_only(blob: bytes, name: str) -> None:
    """torch's weights-only unpickler builds tensors and containers and refuses anything else
    before running it: the one safe way to read the sample inputs."""
    import torch

    if not blob:
        return
    try:
        torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu")
    except Exception:
        raise _pickle_refusal(name, "its sample inputs are not plain tensors") from None


def _pickle_refusal(name: str, what: str) -> UserError:
    return UserError(
        f"{name} cannot be opened safely: {what}, and unpickling it could run any code. "
        "DeployLens refuses pickled code.",
        "Re-export from the model's source (FILE.py:factory, with your consent) or re-save the "
        "program without pickled members (plain tensors as weights, constants and inputs).",
    )


@contextlib.contextmanager
def _weights_only() -> Iterator[None]:
    """While loading: every ``torch.load`` is weights-only and ``pickle.loads`` refuses."""
    import torch
    from torch.export.pt2_archive import _package

    original = torch.load

    def safe_load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return original(*args, **kwargs)

    def no_pickle(*_: Any, **__: Any) -> Any:
        raise _Refused("pickle.loads")

    saved_pickle = _package.pickle
    _package.pickle = type("NoPickle", (), {"loads": staticmethod(no_pickle)})
    torch.load = safe_load
    try:
        yield
    finally:
        torch.load = original
        _package.pickle = saved_pickle


def load_exported_program(path: str | Path) -> Any:
    """The ``ExportedProgram`` in ``path``, or a ``UserError``; no pickle is ever run."""
    import torch

    path = Path(path)
    data = read_bytes(path, "ExportedProgram", MAX_ARCHIVE_BYTES)
    audit(data, path.name)
    try:
        with _weights_only():
            return torch.export.load(io.BytesIO(data))
    except _Refused:
        raise _pickle_refusal(path.name, "it holds a pickled member") from None
    except Exception as exc:
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            raise _pickle_refusal(path.name, "it holds a pickled member") from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UserError(
            f"{path.name} is not a loadable ExportedProgram with this torch "
            f"{torch.__version__}: {first}."
        ) from None
