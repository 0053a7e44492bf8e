"""Shared test setup: isolated config, the shared artifacts, and the Qt blocker for core runs.

``DEPLOYLENS_BLOCK_QT=1`` makes PySide6/shiboken6/pyqtgraph unimportable (run with
``-p no:pytest-qt``): the core must pass its tests without Qt (DESIGN.md §3).
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
QT_MODULES = ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6")


class _QtBlocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in QT_MODULES:
            raise ImportError(f"{name} is blocked: core tests must run without Qt")
        return None


QT_BLOCKED = os.environ.get("DEPLOYLENS_BLOCK_QT") == "1"
if QT_BLOCKED:
    sys.meta_path.insert(0, _QtBlocker())
    collect_ignore = ["gui"]

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# a command's stderr in a test holds its sentence, not the progress lines a pipe gets after a
# few seconds of work (tests/core/test_progress_bar.py takes the variable out again)
os.environ.setdefault("DEPLOYLENS_NO_PROGRESS", "1")


def artifacts_dir() -> Path | None:
    override = os.environ.get("DEPLOYLENS_ARTIFACTS")
    candidate = Path(override) if override else REPO.parent / "shared" / "artifacts"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="module")
def sshd() -> Iterator[dict[str, str]]:
    """OpenSSH's server on a loopback port with a throwaway user and key, per test module
    (tests/helpers/loopback_sshd.py). Skips where it is not installed, fails instead under
    ``DEPLOYLENS_REQUIRE_SSHD=1`` (make test: the Makefile installs openssh-server)."""
    from tests.helpers.loopback_sshd import available, loopback_sshd

    if not available():
        if os.environ.get("DEPLOYLENS_REQUIRE_SSHD") == "1":
            pytest.fail("sshd/ssh are not installed but DEPLOYLENS_REQUIRE_SSHD=1")
        pytest.skip("OpenSSH server not installed (apt install openssh-server)")
    with loopback_sshd() as server:
        yield server


@pytest.fixture
def artifacts() -> Path:
    found = artifacts_dir()
    if found is None:
        pytest.skip("../shared/artifacts is not beside the checkout (set DEPLOYLENS_ARTIFACTS)")
    return found


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Support registries are cached for the session in a temp folder, never the user's."""
    folder = tmp_path_factory.mktemp("cache")
    os.environ["DEPLOYLENS_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(autouse=True, scope="session")
def session_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config folder of whatever starts before a test's own (a module's warm worker is set
    up before ``isolated_config``: it read and wrote the user's real trusted files)."""
    folder = tmp_path_factory.mktemp("session-config")
    os.environ["DEPLOYLENS_CONFIG_DIR"] = str(folder)
    return folder


@pytest.fixture(autouse=True)
def isolated_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test reads or writes the user's real settings, recent files or window layout."""
    folder = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("DEPLOYLENS_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def shared_exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the heaviest exports are made once per run (tests/helpers/shared_exports.py)."""
    from tests.helpers.shared_exports import shared_folder

    return shared_folder(tmp_path_factory)


@pytest.fixture
def samples() -> Path:
    return REPO / "resources" / "samples"


# CI sets this (make test): the real TensorRT-RTX tests must run there; a skip fails them instead.
REQUIRE_TRT_RTX = os.environ.get("DEPLOYLENS_REQUIRE_TRT_RTX") == "1"


@pytest.fixture
def rtx() -> Any:
    """The real ``tensorrt_rtx`` module (NVIDIA's TensorRT-RTX: parser and ahead-of-time
    builder, no GPU needed). Skipped where it is not installed — except in CI, where a missing
    install fails the test."""
    import importlib.util

    if importlib.util.find_spec("tensorrt_rtx") is None:
        if REQUIRE_TRT_RTX:
            pytest.fail("tensorrt_rtx is not installed but DEPLOYLENS_REQUIRE_TRT_RTX=1")
        pytest.skip("tensorrt-rtx-cu12 is not installed (pip install -e .[trt])")
    import tensorrt_rtx

    return tensorrt_rtx


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.gpu`` tests run only where CUDA is visible (never in CI)."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none visible to PyTorch)")
        for item in gpu_items:
            item.add_marker(skip)
