"""Get the support matrix: the worker builds or finds the cache for its interpreter."""

from __future__ import annotations

from deploylens.core.settings import AppSettings
from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.support.request import CollectRequest
from deploylens.core.support.result import RegistryCache


def load_matrix(python: str | None = None, refresh: bool = False) -> SupportMatrix:
    from deploylens.core.jobs import REMOTE

    python = python or AppSettings.load().worker_python or None
    copy_to = ""
    if REMOTE["host"]:  # the host's registries, kept here per host
        from deploylens.core.settings import cache_dir

        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in REMOTE["host"])
        copy_to = str(cache_dir() / "remote" / safe / "support.json")
    answer: RegistryCache = CollectRequest(refresh, copy_to).run(python)
    return with_plugins(SupportMatrix.load(answer.path))


def with_plugins(matrix: SupportMatrix) -> SupportMatrix:
    """Plugins add rows and implementations (custom-domain ops, ORT references, TRT plugins)."""
    from deploylens.core.plugin_api import load_plugins

    matrix.plugins, _ = load_plugins()
    return matrix
