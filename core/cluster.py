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
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError

INSTALL_HINT = "pip install 'deploylens[cluster]' (Ray) into the worker's interpreter"
# tests only: "LABEL:once:NONCE" kills a point's first try, "LABEL:always" each; comma-separated
FAULT_ENV = "DEPLOYLENS_FAULT_POINT"
FORWARDED_ENV = (FAULT_ENV, "DEPLOYLENS_CONFIG_DIR")


def available() -> bool:
    """Whether Ray is installed in this interpreter — looked up, not imported (importing Ray
    costs ~0.3 s, which a small sweep that stays in the worker should not pay); a broken or
    shadowed install is found at start, where ``auto`` falls back to the worker."""
    import importlib.util

    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        return False


# Ray's fixed cost here: ~2-5 s to start, ~0.1 s to stop, a task's imports. Fanned out over
# two cores a latency-bound sweep ran 1.7x faster, a wide model (ORT's threads already busy)
# 0.7x: below this much estimated work, auto keeps the points in the worker.
RAY_PAYS_OFF_S = float(os.environ.get("DEPLOYLENS_RAY_PAYS_OFF_S") or 30.0)  # (variable: tests)


def choose(executor: str, address: str = "") -> str:
    """ "ray", "worker", or "auto" (the job decides from what the points will cost: see
    ``auto_for_cpu_work``). Asking for Ray (or naming a cluster) without it is an error that
    says how to get it; auto without Ray is the worker."""
    if executor == "ray" or address:
        if not available():
            raise UserError(
                "This job asks for Ray, which the worker's interpreter does not have.",
                INSTALL_HINT + "; or run it in the worker: --executor worker.",
            )
        return "ray"
    return "auto" if executor == "auto" and available() else "worker"


def auto_for_cpu_work(estimated_s: float) -> tuple[str, str]:
    """Where ``auto`` runs CPU points whose remaining work is estimated at ``estimated_s`` on
    one core: Ray only when there are cores to fan out to and the work repays its start."""
    cores = os.cpu_count() or 1
    if cores < 2:
        return "worker", "one core: Ray has nothing to fan out to"
    if estimated_s < RAY_PAYS_OFF_S:
        return "worker", (
            f"about {estimated_s:.1f} s of work left: less than Ray's start repays "
            f"(auto takes Ray from {RAY_PAYS_OFF_S:.0f} s)"
        )
    return "ray", f"about {estimated_s:.0f} s of work over {cores} cores"


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


def _run_on_node(target: str, args: dict[str, Any], label: str) -> tuple[Any, str]:
    """What a Ray worker runs: the named function, after the test-only fault hook."""
    for fault in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        wanted, _, mode = fault.partition(":")
        if wanted != label:
            continue
        # ``once:FOLDER``: the marker that says "it died already" lives in the test's folder
        # (it was left in the shared temp dir, one more file per test run)
        _, _, folder = mode.partition(":")
        marker = Path(folder or tempfile.gettempdir()) / f"deploylens-fault-{_slug(fault)}"
        if mode.startswith("always") or not marker.exists():
            marker.touch()
            os._exit(17)  # a dead worker, as a segfault or the OOM killer leaves it
    module, _, name = target.partition(":")
    value = getattr(importlib.import_module(module), name)(**args)
    import ray

    return value, ray.get_runtime_context().get_node_id()[:12]


def _slug(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Placer:
    """Which node each point goes to. Ray's default placement keeps a warm worker busy with the
    next queued task, so on a busy machine all seven points of a two-node sweep ran on the
    head while the second node's worker was still starting. Here each point waits for room
    we have not yet taken on some node (its CPUs and GPUs) and is pinned there (softly: a node
    that has died falls back to Ray's choice); a freed node takes the next point, so every
    node works from the first point and a fast node takes more of them."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.free = {
            str(node["NodeID"]): {k: float(v) for k, v in node.get("Resources", {}).items()}
            for node in nodes
            if node.get("Alive")
        }
        self.total = {node: dict(room) for node, room in self.free.items()}
        self.used_at = dict.fromkeys(self.free, 0)
        self.turn = 0

    @staticmethod
    def _fits(room: dict[str, float], call: Call) -> bool:
        return room.get("CPU", 0.0) >= call.cpus and room.get("GPU", 0.0) >= call.gpus

    def fits_anywhere(self, call: Call) -> bool:
        return any(self._fits(room, call) for room in self.total.values())

    def take(self, call: Call, avoid: str = "") -> str | None:
        """The node ``call`` runs on now (its room taken), or None while no node has room;
        ``avoid`` (where its last try died) only when another node has room."""
        ready = [node for node, room in self.free.items() if self._fits(room, call)]
        if len(ready) > 1 and avoid in ready:
            ready.remove(avoid)
        if not ready:
            return None
        node = max(ready, key=lambda n: (self.free[n].get("CPU", 0.0), -self.used_at[n]))
        self.free[node]["CPU"] = self.free[node].get("CPU", 0.0) - call.cpus
        self.free[node]["GPU"] = self.free[node].get("GPU", 0.0) - call.gpus
        self.turn += 1
        self.used_at[node] = self.turn
        return node

    def give_back(self, node: str, call: Call) -> None:
        if node in self.free:
            self.free[node]["CPU"] += call.cpus
            self.free[node]["GPU"] = self.free[node].get("GPU", 0.0) + call.gpus


def fan_out(
    calls: list[Call],
    on_done: Callable[[Outcome], None],
    should_stop: Callable[[], bool] = lambda: False,
    retries: int = 1,
) -> dict[str, Outcome]:
    """Run every call (Ray must be started); ``on_done`` gets each outcome as it finishes.
    A failed call is tried ``retries`` more times (on another node where one has room);
    ``should_stop`` cancels what is left. Points are placed by ``Placer``."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(_run_on_node)
    placer = Placer(ray.nodes())
    waiting: deque[tuple[Call, int, str, str]] = deque((call, 1, "", "") for call in calls)
    pending: dict[Any, tuple[Call, int, str, str]] = {}

    def submit_waiting() -> None:
        while waiting:
            call, attempt, first_error, died_on = waiting[0]
            node = placer.take(call, avoid=died_on)
            if node is None and pending and placer.fits_anywhere(call):
                return  # it waits for a node our other points fill to free up
            # (node None past here: no node could ever hold it; Ray's placement says so)
            waiting.popleft()
            options: dict[str, Any] = {
                "num_cpus": call.cpus, "num_gpus": call.gpus, "max_retries": 0,
                "name": f"deploylens:{call.key}",
            }  # fmt: skip
            if node:
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=True)
            ref = task.options(**options).remote(call.target, call.args, call.key)
            pending[ref] = (call, attempt, first_error, node or "")

    submit_waiting()
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
                call, attempt, first_error, placed = pending.pop(ref)
                placer.give_back(placed, call)
                try:
                    value, node = ray.get(ref)
                except Exception as exc:  # the task raised, or its worker died
                    error = _describe(exc)
                    if attempt <= retries:
                        waiting.appendleft((call, attempt + 1, first_error or error, placed))
                        continue
                    outcome = Outcome(call.key, "failed", None, error, attempt, first_error)
                else:
                    outcome = Outcome(call.key, "ok", value, "", attempt, first_error, node)
                outcomes[call.key] = outcome
                outcome.done, outcome.of = len(outcomes), len(calls)
                on_done(outcome)
            submit_waiting()
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
