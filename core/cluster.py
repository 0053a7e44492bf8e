"""Independent points of a study fanned out as Ray tasks (the ``cluster`` extra).

Why Ray and not our own pool: it already schedules by resources (a GPU point waits for a GPU,
on whichever node has one), runs on one machine with no setup (``ray.init()``: the same code
path as a cluster) and on a cluster by address, and moves results through its object store.
What we add: the code a task needs travels with the job (Ray's ``py_modules``, built from the
same byte-stable archive as the remote worker's, so a cluster needs no DeployLens install; on
this machine the same archive on Ray's PYTHONPATH),
a task's inputs travel by content (``put_files``), each result is handed over as it finishes,
a point that fails — an exception or a dead Ray worker — is retried once and reported with
its first error, and one failure never loses the others.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError

INSTALL_HINT = "pip install 'deploylens[cluster]' (Ray) into the worker's interpreter"
# tests only: "LABEL:once:NONCE" kills a point's first try, "LABEL:always" each; comma-separated
FAULT_ENV = "DEPLOYLENS_FAULT_POINT"
FORWARDED_ENV = (FAULT_ENV, "DEPLOYLENS_CONFIG_DIR")


def available() -> bool:
    """Whether Ray imports in this interpreter (a real import: a broken or shadowed install
    counts as missing; only sweeps ask, and they start Ray next anyway)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def choose(executor: str, address: str = "") -> str:
    """ "ray" or "worker" for a study's points: auto is Ray when this interpreter has it; asking
    for Ray (or naming a cluster) without it is an error that says how to get it."""
    if executor == "ray" or address:
        if not available():
            raise UserError(
                "This job asks for Ray, which the worker's interpreter does not have.",
                INSTALL_HINT + "; or run it in the worker: --executor worker.",
            )
        return "ray"
    return "ray" if executor == "auto" and available() else "worker"


@dataclass
class Call:
    """One point: ``target`` ("module:function") called with ``args`` on a Ray worker."""

    key: str
    target: str
    args: dict[str, Any]
    cpus: float = 1.0
    gpus: float = 0.0


@dataclass
class Outcome:
    key: str
    status: str  # "ok" | "failed"
    value: Any = None
    error: str = ""
    attempts: int = 1
    first_error: str = ""  # why the first try failed, when a retry was needed
    node: str = ""
    done: int = 0  # how many calls had finished with this one
    of: int = 0  # how many calls there are

    def note(self) -> str:
        """What the table says of a retried or failed point ("" for a first-try success)."""
        if self.status != "ok":
            return f"failed {'twice' if self.attempts > 1 else 'once'} on Ray: {self.error}"
        if self.first_error:
            return f"retried once: the first try failed ({self.first_error})"
        return ""


@dataclass
class Cluster:
    """What the sweep ran on: for the report and the note."""

    address: str  # "" for one started here
    nodes: int = 0
    cpus: float = 0.0
    gpus: float = 0.0
    started_here: bool = False
    seconds_to_start: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def code_modules() -> list[str]:
    """``py_modules`` for Ray: our packages unpacked once per content hash (the archive the
    remote worker gets), so every node imports the same code the driver runs."""
    from deploylens.core.settings import cache_dir
    from deploylens.core.worker.remote import code_archive

    digest, archive = code_archive()

    def unpack(partial: Path) -> None:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(partial, filter="data")

    return [str(_once(cache_dir() / "ray-code" / digest, unpack) / "deploylens")]


def start(address: str = "", cpus: int | None = None) -> Cluster:
    """Connect to ``address`` (a running cluster) or start Ray on this machine; the caller
    stops it with ``stop()`` when it was started here."""
    try:
        import ray
    except ImportError:
        raise UserError(f"Ray is not installed: {INSTALL_HINT}.") from None
    began = time.perf_counter()
    started_here = not address and not ray.is_initialized()
    try:
        if address:  # other machines: the code and our variables travel in a runtime env
            env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
            runtime_env = {"py_modules": code_modules(), "env_vars": env}
            ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        elif started_here:
            # Ray's processes inherit this process's environment: with the code on their path
            # no runtime env is needed, and Ray's pre-started workers take the first tasks
            # (a runtime env, even one variable, makes it start new ones: 0.75 s, not 0.1 s)
            with _on_python_path(Path(code_modules()[0]).parent):
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    except ConnectionError as exc:
        raise UserError(
            f"Could not reach the Ray cluster at {address}: {exc}",
            "Check the address (ray status on the head node prints it) and the network.",
        ) from None
    resources = ray.cluster_resources()
    nodes = sum(1 for key in resources if key.startswith("node:") and "internal" not in key)
    return Cluster(address, len([n for n in ray.nodes() if n.get("Alive")]) or nodes,
                   float(resources.get("CPU", 0)), float(resources.get("GPU", 0)),
                   started_here, time.perf_counter() - began)  # fmt: skip


@contextmanager
def _on_python_path(root: Path) -> Iterator[None]:
    """``root`` first on PYTHONPATH while Ray starts (so for the processes it spawns), then
    the variable as it was."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), before)))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def stop(cluster: Cluster) -> None:
    import ray

    if not ray.is_initialized():
        return
    if cluster.started_here:
        _kill_autoscaler_monitor()
    ray.shutdown()


def _kill_autoscaler_monitor() -> None:
    """Ray's autoscaler monitor has nothing to scale on one machine, and it ignores the SIGTERM
    of ``ray.shutdown()`` for the whole second that is then waited (1.0 s of its 1.3 s,
    measured with Ray 2.60); killed first. Ray's private node API: if it is not there, the
    normal shutdown still stops everything, a second later."""
    try:
        from ray._private import worker

        node: Any = worker._global_node
        for info in node.all_processes.get("monitor", []):
            info.process.kill()
            info.process.wait(timeout=5)
    except Exception:  # any other Ray: leave it to ray.shutdown()
        pass


def _run_on_node(target: str, args: dict[str, Any], label: str) -> tuple[Any, str]:
    """What a Ray worker runs: the named function, after the test-only fault hook."""
    for fault in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        wanted, _, mode = fault.partition(":")
        if wanted != label:
            continue
        marker = Path(tempfile.gettempdir()) / f"deploylens-fault-{_slug(fault)}"
        if mode.startswith("always") or not marker.exists():
            marker.touch()
            os._exit(17)  # a dead worker, as a segfault or the OOM killer leaves it
    module, _, name = target.partition(":")
    value = getattr(importlib.import_module(module), name)(**args)
    import ray

    return value, ray.get_runtime_context().get_node_id()[:12]


def _slug(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def fan_out(
    calls: list[Call],
    on_done: Callable[[Outcome], None],
    should_stop: Callable[[], bool] = lambda: False,
    retries: int = 1,
) -> dict[str, Outcome]:
    """Run every call (Ray must be started); ``on_done`` gets each outcome as it finishes.
    A failed call is tried ``retries`` more times; ``should_stop`` cancels what is left."""
    import ray

    task = ray.remote(_run_on_node)
    pending: dict[Any, tuple[Call, int, str]] = {}

    def submit(call: Call, attempt: int, first_error: str) -> None:
        options = task.options(
            num_cpus=call.cpus, num_gpus=call.gpus, max_retries=0, name=f"deploylens:{call.key}"
        )
        ref = options.remote(call.target, call.args, call.key)
        pending[ref] = (call, attempt, first_error)

    for call in calls:
        submit(call, 1, "")
    outcomes: dict[str, Outcome] = {}
    try:
        while pending:
            if should_stop():
                for ref in pending:
                    ray.cancel(ref, force=True)
                pending.clear()
                break
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.25)
            for ref in done:
                call, attempt, first_error = pending.pop(ref)
                try:
                    value, node = ray.get(ref)
                except Exception as exc:  # the task raised, or its worker died
                    error = _describe(exc)
                    if attempt <= retries:
                        submit(call, attempt + 1, first_error or error)
                        continue
                    outcome = Outcome(call.key, "failed", None, error, attempt, first_error)
                else:
                    outcome = Outcome(call.key, "ok", value, "", attempt, first_error, node)
                outcomes[call.key] = outcome
                outcome.done, outcome.of = len(outcomes), len(calls)
                on_done(outcome)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
    return outcomes


def _describe(exc: BaseException) -> str:
    """One line: the task's own exception, or how its worker died."""
    cause = getattr(exc, "cause", None)
    if cause is not None and not isinstance(cause, type):
        return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    name = type(exc).__name__
    if "WorkerCrashed" in name or "died" in " ".join(text[:3]).lower():
        return f"the Ray worker running it died ({name})"
    return f"{name}: {text[0] if text else ''}"


# -- inputs by content ----------------------------------------------------------------------
def put_files(paths: Iterable[Path]) -> dict[str, Any]:
    """Files a task must read, in Ray's object store once: {local path: (digest, name, ref)}."""
    import ray

    from deploylens.core.worker.transfer import bundle

    shipped: dict[str, Any] = {}
    for path in paths:
        item = bundle(path)
        blobs = {relative: local.read_bytes() for local, relative, _, _ in item.files}
        shipped[str(path)] = (item.digest, item.name, ray.put(blobs))
    return shipped


def materialize(shipped: tuple[str, str, Any]) -> str:
    """On the node: the shipped file (with its companions) in a node-local folder named by its
    digest, written once; returns the path the task reads."""
    digest, name, blobs = shipped
    import ray

    def write(partial: Path) -> None:
        data = ray.get(blobs) if isinstance(blobs, ray.ObjectRef) else blobs
        for relative, content in data.items():
            target = partial / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    folder = Path(tempfile.gettempdir()) / "deploylens-ray-files" / digest
    return str(_once(folder, write) / name)


def _once(folder: Path, fill: Callable[[Path], None]) -> Path:
    """``folder``, filled by ``fill`` the first time only: in a temporary folder beside it,
    renamed when complete, so a reader never sees half of it (its name is its content's
    digest: a process that finished first has the same bytes, and its copy stays)."""
    if (folder / ".complete").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=folder.parent))
    try:
        fill(partial)
        (partial / ".complete").touch()
        os.replace(partial, folder)
    except BaseException as exc:  # nothing half-made stays behind
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
        if not (isinstance(exc, OSError) and (folder / ".complete").exists()):
            raise
    return folder
