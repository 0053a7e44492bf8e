"""Where an output goes when the user has not named one: beside their model, or — when the model
sits in DeployLens's own installation (the bundled samples), in the interpreter's libraries, or in
a folder we may not write — in the user's outputs folder. Surgery on a bundled sample wrote its
edited model into the install tree, and a default engine path pointed there too."""

from __future__ import annotations

import os
import sysconfig
from functools import cache
from importlib.util import find_spec
from pathlib import Path

import platformdirs

PACKAGES = ("deploylens.core", "deploylens.gui", "deploylens.plugins", "deploylens.resources")


def outputs_dir() -> Path:
    """The user's own folder for outputs with nowhere better to go (``DEPLOYLENS_CONFIG_DIR``
    moves it, as it moves the settings)."""
    override = os.environ.get("DEPLOYLENS_CONFIG_DIR")
    if override:
        return Path(override) / "outputs"
    return Path(platformdirs.user_data_dir("deploylens")) / "outputs"


@cache
def installation() -> tuple[Path, ...]:
    """The folders that belong to the installation: our packages' and the interpreter's."""
    folders: list[Path] = []
    for package in PACKAGES:
        spec = find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            folders.append(Path(location).resolve())
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        folder = sysconfig.get_paths().get(key)
        if folder:
            folders.append(Path(folder).resolve())
    return tuple(dict.fromkeys(folders))


def is_installation(folder: str | Path) -> bool:
    resolved = Path(folder).resolve()
    return any(resolved == root or root in resolved.parents for root in installation())


def place(folder: str | Path, name: str) -> str:
    """``folder/name`` (as given: a relative model keeps a relative engine in the commands we
    print) if ``folder`` is the user's and writable, else ``outputs_dir()/name``."""
    absolute = Path(os.path.abspath(folder))
    if is_installation(absolute) or not os.access(absolute, os.W_OK):
        return str(outputs_dir() / name)
    return str(Path(folder) / name)


def beside(model: str | Path, suffix: str) -> str:
    """The default output for ``model``: its stem + ``suffix`` (``".engine"``,
    ``".edited.onnx"``) beside it, or in the outputs folder (see ``place``)."""
    path = Path(model)
    return place(path.parent, path.stem + suffix)
