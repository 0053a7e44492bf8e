"""Whether this DeployLens runs from a packaged bundle (PyInstaller), and where its files are.

A bundle has no ``python -m`` and no pip: its own worker is the bundle's executable started with
``--deploylens-worker``; a worker in another interpreter (the user's training environment) boots
from the plain-source copy of the worker's packages the bundle carries (``deploylens-src``); and
a missing module is not a ``pip install`` away but a Preferences choice away.
"""

from __future__ import annotations

import os
import sys

WORKER_FLAG = "--deploylens-worker"
SOURCE_FOLDER = "deploylens-src"


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def bundle_root() -> str:
    """The folder the bundle unpacked into (``sys._MEIPASS``), or "" when not frozen."""
    return str(getattr(sys, "_MEIPASS", "")) if is_frozen() else ""


def bundled_sources() -> dict[str, str]:
    """``deploylens.<room>`` → its source folder inside the bundle (for foreign interpreters)."""
    root = os.path.join(bundle_root(), SOURCE_FOLDER)
    return {
        f"deploylens.{room}": os.path.join(root, room) for room in ("core", "plugins", "resources")
    }
