"""PySide6's ``__feature__`` switch asks of every module imported after PySide6 whether its
source mentions "PySide6" (a module that does may select features such as ``snake_case``). It
reads each source through ``inspect.getsource``: linecache, a decode and a list of lines per
module, ~0.1 ms each, for the ~300 modules the window imports after PySide6 (0.03–0.04 s of the
start). The same question is answered here from the file's bytes; anything that is not a plain
``.py`` file on disk still goes to PySide6's own check, so every answer is the one it gives."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

MARK = b"PySide6"
_FEATURE = "shibokensupport.feature"  # where PySide6 keeps the check (6.4 to 6.11 at least)


def install() -> bool:
    """Answer PySide6's per-module check from the source's bytes; ``False`` (and nothing
    changed) where this PySide6 has no such check."""
    feature = sys.modules.get(_FEATURE)
    original = getattr(feature, "_mod_uses_pyside", None)
    if feature is None or not callable(original) or getattr(original, "from_bytes", False):
        return False
    feature._mod_uses_pyside = _from_bytes(original)  # type: ignore[attr-defined]  # a module's global
    return True


def _from_bytes(original: Any) -> Any:
    def uses_pyside(module: ModuleType) -> bool:
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            try:
                with open(path, "rb") as source:
                    return MARK in source.read()
            except OSError:
                pass
        return bool(original(module))

    uses_pyside.from_bytes = True  # type: ignore[attr-defined]  # installed once
    uses_pyside.original = original  # type: ignore[attr-defined]  # for the test's comparison
    return uses_pyside
