"""Find the GUI through the ``deploylens.frontends`` entry points, never by import.

The core stays Qt-free (DESIGN.md §3); the CLI still opens the window or renders a screenshot
when the GUI is installed and its system libraries are there.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from deploylens.core.errors import UserError

QT_SYSTEM_PACKAGES = (
    "libgl1 libegl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0 "
    "(and for a real window: libxcb-cursor0 libxkbcommon-x11-0)"
)


def load_frontend(name: str) -> Callable[..., Any]:
    """The callable registered as ``name``, or a ``UserError`` saying what is missing."""
    matches = [ep for ep in entry_points(group="deploylens.frontends") if ep.name == name]
    if not matches:
        raise UserError(
            f"The DeployLens GUI ('{name}') is not installed in this environment.",
            "Reinstall DeployLens (pip install deploylens); the CLI works without it.",
        )
    try:
        result: Callable[..., Any] = matches[0].load()
        return result
    except ImportError as exc:
        raise UserError(
            f"The DeployLens GUI cannot start: {exc}.",
            "Qt needs these system packages (Debian/Ubuntu): apt-get install " + QT_SYSTEM_PACKAGES,
        ) from None
