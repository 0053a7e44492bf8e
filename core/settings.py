"""User settings that the CLI shares with the GUI (the worker interpreter), via platformdirs.

``DEPLOYLENS_CONFIG_DIR`` moves the folder (tests, portable installs).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs
import tomli_w

from deploylens.core.files import atomic_write_text


def config_dir() -> Path:
    override = os.environ.get("DEPLOYLENS_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("deploylens"))


def cache_dir() -> Path:
    """Where captures land when the user has not chosen a path (never next to their model);
    under ``DEPLOYLENS_CONFIG_DIR`` when that is set."""
    override = os.environ.get("DEPLOYLENS_CONFIG_DIR")
    return Path(override) / "cache" if override else Path(platformdirs.user_cache_dir("deploylens"))


@dataclass
class AppSettings:
    worker_python: str = ""  # empty: the app's own interpreter
    remote_host: str = ""  # user@server[:port]: workers run there over ssh ("" : here)
    remote_python: str = "python3"  # the interpreter on that host

    @classmethod
    def load(cls) -> AppSettings:
        path = config_dir() / "settings.toml"
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def save(self) -> None:
        atomic_write_text(config_dir() / "settings.toml", tomli_w.dumps(asdict(self)))
