"""PySide6's per-module "does its source mention PySide6?" check, answered from the file's bytes
(gui/common/pyside_scan.py): the same answer as PySide6's own check on every kind of module, and
PySide6's features still switch per module."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import deploylens.core.errors
import deploylens.gui.common.qt_app  # installs the check, as the app does
from deploylens.gui.common import pyside_scan


def installed_check() -> Any:  # PySide6's check, with the attributes ours adds
    feature = sys.modules.get("shibokensupport.feature")
    check = getattr(feature, "_mod_uses_pyside", None)
    if check is None or not getattr(check, "from_bytes", False):
        pytest.fail("the app's Qt module did not install the check on this PySide6")
    return check


def module_from(path: Path, name: str) -> ModuleType:
    module = ModuleType(name)
    module.__file__ = str(path)
    return module


def test_the_same_answer_as_pyside6s_own_check(tmp_path: Path) -> None:
    check = installed_check()
    uses = tmp_path / "uses_qt.py"
    uses.write_text("# a plugin that draws with PySide6\nVALUE = 'ÿ'\n", encoding="utf-8")
    plain = tmp_path / "plain.py"
    plain.write_text("VALUE = 'PySide 6 is only mentioned apart'\n", encoding="utf-8")
    empty = tmp_path / "empty.py"
    empty.write_bytes(b"")
    gone = module_from(tmp_path / "deleted.py", "deleted")  # its file is not there any more
    modules = [
        sys.modules["deploylens.gui.common.qt_app"],  # ours, using PySide6
        deploylens.core.errors,  # ours, without Qt
        json,  # the standard library
        sys,  # built in: no file
        importlib.import_module("numpy._core._multiarray_umath"),  # an extension module
        module_from(uses, "uses_qt"),
        module_from(plain, "plain"),
        module_from(empty, "empty"),
        gone,
    ]
    answers = [check(module) for module in modules]
    assert answers == [check.original(module) for module in modules]
    assert answers == [True, False, False, False, False, True, False, False, False]


def test_installed_once() -> None:
    check = installed_check()
    assert pyside_scan.install() is False
    assert sys.modules["shibokensupport.feature"]._mod_uses_pyside is check


FEATURES = """
import json, sys
from pathlib import Path
import deploylens.gui.common.qt_app  # the check installed
from PySide6.QtCore import QObject
folder = Path(sys.argv[1])
(folder / "snake.py").write_text(
    "from __feature__ import snake_case\\n"
    "from PySide6.QtCore import QObject\\n"
    "def name(o):\\n    o.set_object_name('snake')\\n    return o.object_name()\\n"
)
sys.path.insert(0, str(folder))
import snake
o = QObject()
named = snake.name(o)  # snake_case names in the module that selected them
print(json.dumps({"snake": named, "camel": o.objectName(),  # Qt's own names here
                  "from_bytes": getattr(sys.modules["shibokensupport.feature"]._mod_uses_pyside,
                                        "from_bytes", False)}))
"""


def test_a_module_that_selects_a_feature_still_gets_it(tmp_path: Path) -> None:
    """A plugin with ``from __feature__ import snake_case`` sees snake_case names; the modules
    that select nothing keep Qt's own names (in a fresh interpreter: features are process-wide
    state)."""
    script = tmp_path / "main.py"  # a file: PySide6 ignores a ``-c`` script it cannot read
    script.write_text(FEATURES, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"snake": "snake", "camel": "snake", "from_bytes": True}
