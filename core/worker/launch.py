"""How to start a worker in any interpreter: the command line and environment (app side)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile

from deploylens.core.blas import one_blas_thread
from deploylens.core.worker.reaper import running

# The scratch folder a worker writes big results into; the app side creates and removes it, so a
# worker that was killed (cancel, OOM, segfault) leaves nothing behind in the temp folder.
WORKDIR_ENV = "DEPLOYLENS_WORKDIR"

# The rooms a worker may import; gui never runs in a worker.
WORKER_PACKAGES = ("deploylens.core", "deploylens.plugins", "deploylens.resources")


def package_folders() -> dict[str, str]:
    """Where this app's ``deploylens.*`` packages live as source files (wheels, editable
    installs, and the copy a packaged bundle carries for foreign interpreters)."""
    from deploylens.core.frozen import bundled_sources, is_frozen

    if is_frozen():
        return bundled_sources()
    folders: dict[str, str] = {}
    for name in WORKER_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders[name] = next(iter(spec.submodule_search_locations))
    return folders


def boot_script() -> str:
    return os.path.join(package_folders()["deploylens.core"], "worker", "boot.py")


WORKDIR_PREFIX = "deploylens-worker-"


def new_workdir() -> str:
    """A fresh scratch folder for a worker, named by the process that owns it; folders whose
    owner is gone (a killed app and its killed worker could not remove theirs: ~100 MB of
    intermediate arrays) are removed first."""
    sweep_stale_workdirs()
    return tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")


def sweep_stale_workdirs(folder: str = "") -> int:
    """Remove ``deploylens-worker-<pid>-*`` folders whose pid is no longer running."""
    folder = folder or tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(WORKDIR_PREFIX):
            continue
        owner = name[len(WORKDIR_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or running(int(owner)):
            continue
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        removed += 1
    return removed


def remove_workdir(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def worker_argv(python: str | None = None) -> list[str]:
    """The command line that starts a worker in ``python`` (default: the app's interpreter).
    A packaged bundle is its own worker (its executable with ``--deploylens-worker``): it has no
    interpreter to hand a script to."""
    from deploylens.core.frozen import WORKER_FLAG, is_frozen

    if is_frozen() and (python is None or python == sys.executable):
        return [sys.executable, WORKER_FLAG]
    return [python or sys.executable, boot_script()]


def worker_env(workdir: str) -> dict[str, str]:
    """The worker's environment: where our packages are, and its scratch folder."""
    env = dict(os.environ)
    env[WORKDIR_ENV] = workdir
    env["DEPLOYLENS_PACKAGES"] = json.dumps(package_folders())
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("PYTHONSTARTUP", None)
    # numpy's OpenBLAS in the worker only serves our own reductions (the comparisons' dot
    # products, memory-bound): its second thread halved no wall time and spun on after every
    # call, 0.6 s of CPU of a 7 s vit_b_16 validation (core/blas.py)
    one_blas_thread(env)
    return env
