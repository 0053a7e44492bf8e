"""Ray's lifecycle for a sweep or a study: started on this machine — listening on loopback only,
with Ray's token authentication, a bounded object store and a start deadline enforced from
outside the process — or reached at a cluster's address, and stopped with nothing of it left
running. ``RayUnavailable`` says why not, and ``auto`` then runs the points in the worker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deploylens.core.cluster import FORWARDED_ENV, INSTALL_HINT, Cluster, code_modules
from deploylens.core.errors import UserError


class RayUnavailable(UserError):
    """Ray could not start or be reached in time: said with its cause, and ``auto`` runs the
    points in the worker instead."""


# ray.init plus a first task: 2-5 s here, far more means it is stuck (the variable: tests)
START_DEADLINE_S = float(os.environ.get("DEPLOYLENS_RAY_START_DEADLINE_S") or 90.0)
CONNECT_DEADLINE_S = 10.0  # a TCP answer from the cluster's GCS port
LOOPBACK = "127.0.0.1"
# Ray's default shared-memory store is 30 % of RAM, mapped at start: under an address-space cap
# (ulimit -v 8 GB) that mmap failed and Ray hung. A sweep or study ships one model through it.
OBJECT_STORE_BYTES = 1 << 30


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of a Ray cluster's GCS (what ``ray start --head`` prints); anything else is
    a sentence saying what to give instead."""
    text = address.strip()
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UserError(
            f"--ray-address {address!r}: give the cluster's GCS address as HOST:PORT, not a "
            f"{scheme}:// URL"
            + (" (Ray Client is not supported)" if scheme == "ray" else " (the dashboard's)"),
            "ray status on the head node prints it (e.g. 10.0.0.5:6379).",
        )
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if (
        not host
        or not port.isdigit()
        or not 0 < int(port) < 65536
        or any(ch.isspace() or ch in "/@;'\"$`" for ch in host)
    ):
        raise UserError(
            f"--ray-address {address[:80]!r} is not HOST:PORT (a host name or IP, then a port "
            "from 1 to 65535).",
            "ray status on the head node prints the address (e.g. 10.0.0.5:6379).",
        )
    return host, int(port)


def _reachable(host: str, port: int) -> None:
    import socket

    try:
        with socket.create_connection((host, port), timeout=CONNECT_DEADLINE_S):
            return
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise RayUnavailable(
            f"The Ray cluster at {host}:{port} did not answer ({reason}).",
            "Check the address (ray status on the head node prints it) and that this machine "
            "reaches that port; or run the points in the worker: --executor worker.",
        ) from None


def start(address: str = "", cpus: int | None = None) -> Cluster:
    """Connect to ``address`` (a running cluster) or start Ray on this machine — listening on
    loopback only, with token authentication — and prove it runs a task within a deadline; the
    caller stops it with ``stop()`` when it was started here. ``RayUnavailable`` says why not,
    with nothing of Ray's left running."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            f"Ray does not import in the worker's interpreter ({exc}): {INSTALL_HINT}."
        ) from None
    began = time.perf_counter()
    started_here = not address and not ray.is_initialized()
    try:
        if address:  # other machines: the code and our variables travel in a runtime env
            _reachable(*parse_address(address))
            env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
            runtime_env = {"py_modules": code_modules(), "env_vars": env}
            ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        elif started_here:
            _address_space_check()
            # Ray's processes inherit this process's environment: with the code on their path
            # no runtime env is needed, and Ray's pre-started workers take the first tasks
            # (a runtime env, even one variable, makes it start new ones: 0.75 s, not 0.1 s)
            # address "local": a new Ray of our own even where RAY_ADDRESS or a `ray start`
            # on this machine is there for ray.init() to join, whose other nodes would have
            # neither our code nor a loopback-only listener (a cluster is --ray-address)
            with _on_python_path(Path(code_modules()[0]).parent), _loopback_only():
                ray.init(
                    address="local",
                    num_cpus=cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    _node_ip_address=LOOPBACK,
                    object_store_memory=OBJECT_STORE_BYTES,
                )
            _check_loopback()
        _first_task(began)
    except ConnectionError as exc:
        _shut_down(started_here)
        raise RayUnavailable(
            f"Could not reach the Ray cluster at {address}: {exc}",
            "Check the address (ray status on the head node prints it) and the network.",
        ) from None
    except UserError:
        _shut_down(started_here)
        raise
    except Exception as exc:  # Ray's own failure to start, in its words
        cause = _log_cause()
        _shut_down(started_here)
        raise RayUnavailable(
            f"Ray could not start: {_first_line(exc)}" + cause,
            "Run the points in the worker: --executor worker.",
        ) from None
    resources = ray.cluster_resources()
    nodes = sum(1 for key in resources if key.startswith("node:") and "internal" not in key)
    return Cluster(address, len([n for n in ray.nodes() if n.get("Alive")]) or nodes,
                   float(resources.get("CPU", 0)), float(resources.get("GPU", 0)),
                   started_here, time.perf_counter() - began)  # fmt: skip


class Starting:
    """Ray started (or connected) by a thread of its own that stays until ``stop()``: Ray's
    processes die with the thread that started them (their parent-death signal is per
    thread), so that thread also shuts Ray down. The job meanwhile may run points; ``result``
    waits at most until the start deadline, then stops every process Ray started and says
    why (``ray.init`` itself can hang: under an address-space cap its driver never connects)."""

    def __init__(self, address: str = "", cpus: int | None = None) -> None:
        import threading

        self.cluster: Cluster | None = None
        self.error: BaseException | None = None
        self.began = time.monotonic()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._watchdog = _watchdog(START_DEADLINE_S + 5.0)
        self.thread = threading.Thread(target=self._run, args=(address, cpus), daemon=True)
        self.thread.start()

    def _run(self, address: str, cpus: int | None) -> None:
        try:
            self.cluster = start(address, cpus)
        except BaseException as exc:  # said by result(), on the job's thread
            self.error = exc
        self._disarm()
        self._ready.set()
        if self.cluster is None:
            return
        self._stop.wait()
        _shut_down(self.cluster.started_here)

    def ready(self) -> bool:
        return self._ready.is_set()

    def result(self) -> Cluster:
        left = START_DEADLINE_S - (time.monotonic() - self.began)
        if not self._ready.wait(max(left, 0.0)):
            cause = _log_cause()
            killed = kill_ray_processes()
            self._stop.set()
            raise RayUnavailable(
                f"Ray did not start within {START_DEADLINE_S:.0f} s{cause}; its "
                f"{killed} process(es) were stopped.",
                "Run the points in the worker: --executor worker (auto does so by itself).",
            )
        if self.error is not None:
            raise self.error
        assert self.cluster is not None
        return self.cluster

    def _disarm(self) -> None:
        if self._watchdog is not None and self._watchdog.stdin is not None:
            try:
                self._watchdog.stdin.close()  # EOF: the start is over, nothing to kill
            except OSError:
                pass
            self._watchdog.wait()

    def stop(self) -> None:
        """Shut Ray down (from its own thread) and wait for it; a start still hanging is
        abandoned with every process it started killed."""
        self._disarm()
        self._stop.set()
        if self._ready.is_set():
            self.thread.join(timeout=60)
        else:
            kill_ray_processes()


def _watchdog(seconds: float) -> Any:
    """A process that kills this one's Ray processes if the start is not over in ``seconds``
    (``core/worker/reaper.py``: ``ray.init`` can hang holding the interpreter lock, and then
    no thread here can act); None where it cannot start."""
    import subprocess
    import sys

    from deploylens.core.worker import reaper

    try:
        return subprocess.Popen(
            [sys.executable, reaper.__file__, str(os.getpid()), f"{seconds:.1f}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return None


def kill_ray_processes() -> int:
    """SIGKILL every process below this one that Ray started (its GCS, raylet, agents and
    workers), children first; returns how many."""
    from deploylens.core.worker.reaper import kill_descendants

    def rays(command: bytes) -> bool:
        return b"/ray/" in command or command.startswith(b"ray::")

    return kill_descendants(only=rays)


@contextmanager
def _loopback_only() -> Iterator[None]:
    """Ray on this machine reachable from this machine only: its node address stays 127.0.0.1
    (Ray swaps a loopback address for the machine's own, and its servers then listen on every
    interface) and every request needs Ray's token (``RAY_AUTH_MODE=token``: ``ray.init``
    makes one). ``_check_loopback`` proves it took."""
    from ray._private import services

    _set_auth_mode("token")  # stays while this Ray runs (its driver and processes need it)
    resolve = getattr(services, "resolve_ip_for_localhost", None)
    if resolve is not None:
        services.resolve_ip_for_localhost = lambda host: host
    try:
        yield
    finally:
        if resolve is not None:
            services.resolve_ip_for_localhost = resolve


_SAVED_AUTH_MODE: list[str | None] = []


def _set_auth_mode(mode: str | None) -> None:
    """``RAY_AUTH_MODE`` for this process and the Ray it starts. Ray reads it into its config
    when imported: the config is read again (Ray's own test helpers do the same), so a Ray
    imported earlier in this worker takes the new mode. ``None``: the mode as it was."""
    if mode is None:
        if not _SAVED_AUTH_MODE:
            return
        before = _SAVED_AUTH_MODE.pop()
        if before is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = before
    else:
        _SAVED_AUTH_MODE.append(os.environ.get("RAY_AUTH_MODE"))
        os.environ["RAY_AUTH_MODE"] = mode
    try:
        import ray._raylet as raylet  # its own test helpers re-read the config the same way

        raylet_api: Any = raylet  # a compiled module: its stub lacks these two
        raylet_api.Config.initialize("")
        raylet_api.AuthenticationTokenLoader.instance().reset_cache()
    except Exception:  # another Ray: set before its import, the variable alone is enough
        pass


def _check_loopback() -> None:
    """Every socket Ray's processes listen on is a loopback one, or Ray is stopped and the
    sweep told why (a Ray that changed how it binds never listens beyond this machine)."""
    import ray

    addresses = {node.get("NodeManagerAddress", "") for node in ray.nodes()}
    outside = sorted(a for a in addresses if a and a != LOOPBACK)
    outside += [f"{ip}:{port}" for ip, port in listening_sockets(ray_pids()) if not _loopback(ip)]
    if outside:
        raise RayUnavailable(
            f"Ray would listen beyond this machine ({', '.join(outside[:3])}), so DeployLens "
            "stopped it.",
            "Run the points in the worker (--executor worker), or start a cluster yourself "
            "and give its address (--ray-address).",
        )


def _loopback(ip: str) -> bool:
    import ipaddress

    try:
        address = ipaddress.ip_address(ip.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)


def ray_pids() -> list[int]:
    """The processes of the Ray this process started (empty when none or not knowable)."""
    try:
        from ray._private import worker

        node: Any = worker._global_node
        return [info.process.pid for infos in node.all_processes.values() for info in infos]
    except Exception:
        return []


def listening_sockets(pids: Iterable[int]) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the processes ``pids`` (and their children) listen
    on; empty without psutil."""
    try:
        import psutil
    except ImportError:
        return []
    wanted: set[int] = set()
    for pid in pids:
        try:
            process = psutil.Process(pid)
            wanted |= {pid, *(child.pid for child in process.children(recursive=True))}
        except psutil.Error:
            continue
    found = []
    for pid in wanted:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:
            continue
        found += [(c.laddr.ip, c.laddr.port) for c in connections if c.status == "LISTEN"]
    return found


def _first_task(began: float) -> None:
    """A no-op task must come back before the deadline: a Ray whose workers die at start
    (an address-space cap: ``mmap failed``) would otherwise take every point and never
    answer."""
    import ray

    left = max(5.0, START_DEADLINE_S - (time.perf_counter() - began))
    ref = ray.remote(num_cpus=0)(_hello).remote()
    try:
        ray.get(ref, timeout=left)
    except Exception as exc:
        with_timeout = "GetTimeoutError" in type(exc).__name__
        raise RayUnavailable(
            (f"Ray started but ran no task in {START_DEADLINE_S:.0f} s"
             if with_timeout else f"Ray started but its first task failed: {_first_line(exc)}")
            + _log_cause(),
            "Run the points in the worker: --executor worker (auto does so by itself).",
        ) from None  # fmt: skip


def _hello() -> int:
    return os.getpid()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


# Ray's driver and processes map their object store, gRPC threads and arenas at start: under
# an address-space cap of 2.5 GB (prlimit --as) its core worker aborted the whole job process
# (the sweep lost, "the worker exited unexpectedly"); at 4 GB it started. Measured 2026-12-08.
MIN_ADDRESS_SPACE = 4 << 30


def _address_space_check() -> None:
    """Refuse to start Ray where this process may map less than it needs: said at once, and
    ``auto`` runs the points in the worker, instead of Ray aborting the process."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < MIN_ADDRESS_SPACE:
        raise RayUnavailable(
            f"Ray cannot start here: this process may map {soft / 2**30:.1f} GiB of address "
            f"space (ulimit -v / prlimit --as) and Ray needs about {MIN_ADDRESS_SPACE >> 30} GiB "
            "at start.",
            "Run the points in the worker: --executor worker (auto does so by itself), or "
            "raise the limit.",
        )


def _log_cause() -> str:
    """The first error line in the logs of the Ray this process started (``mmap failed`` …),
    as ``" (Ray's log: …)"``; "" when there is none to read."""
    try:
        from ray._private import worker

        folder = Path(worker._global_node.get_logs_dir_path())
    except Exception:
        return ""
    markers = ("mmap failed", "Check failed", "Fatal", "MemoryError", "Killed", "OOM")
    files = [path for kind in ("err", "log", "out") for path in sorted(folder.glob(f"*.{kind}"))]
    for path in files:
        if not path.is_file():
            continue
        try:
            text = path.read_bytes()[-200_000:].decode("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            if any(marker in line for marker in markers):
                return f" (Ray's log {path.name}: {line.strip()[:200]})"
    return ""


def _shut_down(started_here: bool) -> None:
    """Stop what a failed start left (nothing of Ray's outlives the job)."""
    try:
        import ray

        if ray.is_initialized():
            if started_here:
                _kill_autoscaler_monitor()
            ray.shutdown()
    except Exception:
        pass
    if started_here:
        _set_auth_mode(None)


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
    _shut_down(cluster.started_here)


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
