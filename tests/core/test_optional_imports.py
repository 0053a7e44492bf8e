"""Every core module imports without torch, onnxruntime, tensorrt, onnxscript and Qt
(Polygraphy's test_dependencies idea): heavy modules load inside functions only."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import deploylens.core

BLOCKED = (
    "torch",
    "torchvision",
    "onnxruntime",
    "onnxruntime_extensions",
    "onnxscript",
    "tensorrt",
    "PySide6",
    "shiboken6",
    "pyqtgraph",
)

SCRIPT = f"""
import importlib, importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {BLOCKED!r}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
for name in sys.argv[1:]:
    importlib.import_module(name)
leaked = sorted(m for m in sys.modules if m.split('.')[0] in {BLOCKED!r})
assert not leaked, leaked
print('imported', len(sys.argv) - 1)
"""


def test_core_imports_without_optional_dependencies() -> None:
    names = [
        info.name
        for info in pkgutil.walk_packages(deploylens.core.__path__, "deploylens.core.")
        if not info.name.endswith(".boot")  # a script, run by path in the worker
    ]
    assert "deploylens.core.jobs" in names and "deploylens.core.worker.runtime" in names
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *names], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert f"imported {len(names)}" in result.stdout
