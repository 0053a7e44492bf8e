"""The project file (``.deploylens.toml``): what the user works on, saved atomically.

Tables this version does not know are kept and written back unchanged, so an older DeployLens
never loses settings a newer one wrote in a table it does not read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from deploylens.core.errors import ProjectFileError, UserError
from deploylens.core.files import SETTINGS_LIMIT, atomic_write_text, parse_toml, read_text

SCHEMA_VERSION = 2
PROJECT_SUFFIX = ".deploylens.toml"


def _requests_in_tables(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2: the [build] and [surgery] tables hold their job's request (``request``, the
    request's own project table, read as strictly as the worker reads one) instead of the
    panels' own keys. [validate] has held its request since schema 1."""
    build = data.get("build")
    if isinstance(build, dict) and "request" not in build:
        request = {}
        if "trt_version" in build:
            request["version"] = build.pop("trt_version")
        if "settings" in build:
            request["settings"] = build.pop("settings")
        if request:
            build["request"] = request
    surgery = data.get("surgery")
    if isinstance(surgery, dict) and "request" not in surgery and "base" in surgery:
        surgery["request"] = {"model": surgery.pop("base"), "steps": surgery.pop("steps", [])}
    return data


# schema N -> function migrating a raw dict from N to N+1
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _requests_in_tables}


@dataclass
class Project:
    """A project: the model it is about, plus every later panel's settings as raw tables."""

    path: Path | None = None
    model_path: Path | None = None
    tables: dict[str, Any] = field(default_factory=dict)

    def to_toml(self) -> str:
        data: dict[str, Any] = {"deploylens": {"schema": SCHEMA_VERSION}}
        model: dict[str, Any] = dict(self.tables.get("model", {}))
        if self.model_path is not None:
            model["path"] = self._portable(self.model_path)
        if model:
            data["model"] = model
        for name, table in self.tables.items():
            if name not in ("deploylens", "model"):
                data[name] = table
        return tomli_w.dumps(data)

    def _portable(self, target: Path) -> str:
        """Relative to the project file when possible, so projects move with their models."""
        if self.path is None:
            return str(target)
        try:
            return os.path.relpath(target, self.path.parent)
        except ValueError:  # another drive on Windows
            return str(target)

    def save(self, path: str | Path | None = None) -> Path:
        if path is not None:
            self.path = Path(path)
        if self.path is None:
            raise ProjectFileError("The project has no file name yet; choose where to save it.")
        try:
            atomic_write_text(self.path, self.to_toml())
        except OSError as exc:
            raise ProjectFileError(f"Could not save {self.path}: {exc.strerror or exc}.") from None
        return self.path


def _migrate(data: dict[str, Any], path: Path) -> dict[str, Any]:
    meta = data.get("deploylens")
    schema = meta.get("schema") if isinstance(meta, dict) else None
    if type(schema) is not int:  # a boolean is not a schema number (true read as 1)
        raise ProjectFileError(
            f"{path.name} is not a DeployLens project: it has no [deploylens] schema number"
            + (f" (schema = {str(schema).lower()[:40]})." if schema is not None else ".")
        )
    if schema < 1:
        raise ProjectFileError(
            f"{path.name}: [deploylens] schema = {schema} is not a project schema (they start "
            f"at 1; this version writes {SCHEMA_VERSION})."
        )
    if schema > SCHEMA_VERSION:
        raise ProjectFileError(
            f"{path.name} was written by a newer DeployLens (project schema {schema}; this "
            f"version reads up to {SCHEMA_VERSION}). Upgrade DeployLens to open it; the file "
            "was left untouched."
        )
    while schema < SCHEMA_VERSION:
        data = MIGRATIONS[schema](data)
        schema += 1
    return data


def load_project(path: str | Path) -> Project:
    path = Path(path)
    try:
        raw = read_text(path, "project file", limit=SETTINGS_LIMIT)
    except UserError as exc:
        raise ProjectFileError(exc.message) from None
    try:
        data = parse_toml(raw, path.name, "project file")
    except UserError as exc:
        raise ProjectFileError(exc.message) from None
    data = _migrate(data, path)
    project = Project(path=path, tables={k: v for k, v in data.items() if k != "deploylens"})
    model = data.get("model", {})
    if isinstance(model, dict) and "path" in model:
        project.model_path = _model_path(model["path"], path)
    return project


def _model_path(value: Any, path: Path) -> Path:
    """[model] path as a path beside the project, or a ``ProjectFileError`` naming the key: not
    a string, a NUL byte, a name too long, or a symbolic link loop on the way."""
    if not isinstance(value, str) or not value:
        raise ProjectFileError(f"{path.name}: [model] path must be a file name, not {value!r:.40}.")
    if "\x00" in value:
        raise ProjectFileError(f"{path.name}: [model] path {value!r:.60} contains a NUL byte.")
    try:
        return (path.parent / value).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an overlong name
        why = "a symbolic link loop" if isinstance(exc, RuntimeError) else str(exc)[:80]
        raise ProjectFileError(
            f"{path.name}: [model] path {value[:60]!r} cannot be used ({why})."
        ) from None
