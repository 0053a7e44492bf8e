"""One room's dependency missing takes down only that room (issue 46): with ONNX Runtime
unimportable in every process the interpreter starts (a ``sitecustomize`` on ``PYTHONPATH``
blocks it, the workers included), ``validate`` says what is missing and the install line,
``--help`` lists every command, another room's command (``inspect``) works, and the GUI opens
a model offscreen and paints its window. (``tests/core/test_cli.py`` covers a room whose CLI
module itself fails to import: listed as "could not be loaded".)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from PySide6.QtGui import QImage

from tests.core.test_cli import DEPLOYLENS

BLOCKER = '''
import importlib.abc
import sys


class _Missing(importlib.abc.MetaPathFinder):
    """As if onnxruntime were not installed."""

    def find_spec(self, name, path, target=None):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
'''


def _run(args: list[str], site: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "QT_QPA_PLATFORM": "offscreen"}
    env["DEPLOYLENS_CONFIG_DIR"] = str(tmp_path / "config")  # the user's settings stay theirs
    return subprocess.run(
        [DEPLOYLENS, *args], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path
    )


def test_a_room_without_its_dependency_leaves_the_others_working(
    samples: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    model = str(samples / "small_cnn.dynamo.onnx")
    probe = _run(["validate", model], site, tmp_path)
    assert probe.returncode != 0, probe.stdout + probe.stderr  # the blocker is in force
    assert "needs the Python module 'onnxruntime'" in probe.stderr
    assert "-m pip install onnxruntime" in probe.stderr and "Traceback" not in probe.stderr
    helped = _run(["--help"], site, tmp_path)
    assert helped.returncode == 0 and "Traceback" not in helped.stderr
    for command in ("validate", "build", "surgery", "export", "profile", "inspect"):
        assert f"  {command} " in helped.stdout, command
    inspected = _run(["inspect", model], site, tmp_path)
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    assert "Conv" in inspected.stdout
    shot = tmp_path / "window.png"
    shown = _run(["screenshot", model, "--out", str(shot), "--size", "1366x768"], site, tmp_path)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Traceback" not in shown.stderr
    image = QImage(str(shot))
    assert (image.width(), image.height()) == (1366, 768)
