"""The worker in other interpreters: the user's training env, an old Python, a bare one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deploylens.core.jobs import Worker
from deploylens.core.worker.client import PROTOCOL_MISMATCH, JobFailure


def _pyenv(version: str) -> str | None:
    candidate = Path.home() / ".pyenv" / "versions" / version / "bin" / "python3"
    return str(candidate) if candidate.exists() else shutil.which(f"python{version}")


@pytest.mark.parametrize("version", ["3.12.1", "3.13.0"])
def test_other_python_without_deploylens_says_hello(version: str) -> None:
    python = _pyenv(version)
    if python is None:
        pytest.skip(f"Python {version} is not on this machine")
    with Worker(python) as worker:
        hello = worker.session.hello
        assert hello is not None and hello["python"]["version"] == version
        # A bare interpreter: the app's code runs there, its packages are simply missing.
        assert worker.run("selftest.echo", {"x": 1})["params"] == {"x": 1}
        with pytest.raises(JobFailure) as caught:
            worker.run("model.inspect", {"path": "whatever.onnx"})
    assert caught.value.kind == "missing_dependency"
    # One line installs every package the worker needs, not one package per failed attempt.
    hint = caught.value.hint
    assert hint.startswith(f"{python} -m pip install ")
    assert {"onnx", "numpy", "onnxruntime"} <= set(hint.split()[3:])


@pytest.mark.parametrize("version", ["3.6.15", "3.8.18", "3.9.18"])
def test_too_old_python_is_named_precisely(version: str) -> None:
    python = _pyenv(version)
    if python is None:
        pytest.skip(f"Python {version} is not on this machine")
    with pytest.raises(JobFailure) as caught:
        Worker(python).start()
    assert caught.value.kind == PROTOCOL_MISMATCH
    assert f"is Python {version}" in caught.value.message
    assert "3.10 or newer" in caught.value.message
