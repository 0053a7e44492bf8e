"""Consent before running a user's code: a Python file (a model factory) or a native library (a
TensorRT plugin), remembered per file *content* (sha256), so an edited or swapped file asks
again. A settings or project file can name a library, but only the user's own flag (``--trust``,
``--trust-plugins``) or click (the panel's dialog) grants it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text
from deploylens.core.settings import config_dir

# The first bytes of a shared library on Linux (ELF), Windows (PE) and macOS (Mach-O, fat)
LIBRARY_MAGICS = (
    b"\x7fELF",
    b"MZ",
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xfe\xed\xfa\xce",
    b"\xca\xfe\xba\xbe",
)


def file_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _consent_file() -> Path:
    return config_dir() / "trusted_files.json"


def trusted_hashes() -> set[str]:
    try:
        return set(json.loads(_consent_file().read_text()))
    except (OSError, ValueError, TypeError):
        return set()


def grant_consent(path: str | Path) -> str:
    """Remember that the user trusts this exact file content."""
    digest = file_hash(path)
    atomic_write_text(_consent_file(), json.dumps(sorted(trusted_hashes() | {digest})))
    return digest


def is_trusted(path: str | Path) -> bool:
    try:
        return file_hash(path) in trusted_hashes()
    except OSError:
        return False


def require_consent(path: str | Path) -> None:
    """A Python file runs only once its content was consented to."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path} does not exist.")
    if not is_trusted(path):
        raise UserError(
            f"Exporting from {path.name} runs its Python code; DeployLens runs user code only "
            "with your consent.",
            "Consent in the Export panel, or pass --trust on the command line (remembered for "
            "this exact file content).",
        )


def check_library(path: str) -> Path:
    """``path`` when it names a shared library (by its first bytes); empty names, folders and
    files that are not libraries are refused with what they are."""
    if not isinstance(path, str) or not path.strip():
        raise UserError("A plugin library entry is empty: name a .so file (or remove the entry).")
    if "\x00" in path:
        raise UserError(f"The plugin library {path!r} is not a file name (it holds a NUL byte).")
    library = Path(path)
    if not library.is_file():
        raise UserError(
            f"The plugin library {path} "
            + ("is a folder, not a library." if library.is_dir() else "does not exist.")
        )
    try:
        with open(library, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise UserError(f"The plugin library {path} cannot be read: {exc.strerror}.") from None
    if not head.startswith(LIBRARY_MAGICS):
        raise UserError(
            f"{library.name} is not a shared library (an ELF, PE or Mach-O file): TensorRT "
            "cannot load it as a plugin."
        )
    return library


def require_library_consent(path: str) -> Path:
    """A plugin library loads only when it is a library and its content was consented to:
    loading one runs its constructor, whatever the build then does."""
    library = check_library(path)
    if not is_trusted(library):
        raise UserError(
            f"Loading the plugin library {library} runs its native code; DeployLens loads "
            "plugin libraries only with your consent.",
            "Pass --trust-plugins to deploylens build, or confirm the library in the Build "
            "panel's dialog (remembered for this exact file content).",
        )
    return library
