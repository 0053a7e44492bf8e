"""Nothing a worker starts outlives it, and a worker outlives its app by at most a tick.

A job may start processes of its own (Ray's GCS, raylet and agents; a profiler); some of them do
not die with their parent. When the worker leaves — done, cancelled, or because its app died —
it kills every process below it. The watchdog notices an app that died without a word (kill -9 of
the CLI: the worker is re-parented) and ends the worker at once, before its job could write an
output nobody asked for any more. Linux ``/proc``; elsewhere these are no-ops. Stdlib only.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Callable

WATCH_INTERVAL_S = 0.05


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children."""
    parents = _parents()
    found: list[int] = []
    frontier = [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie nobody reaped is not: a killed worker whose
    app died too stays one where the container's init does not reap)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


def command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ")
    except OSError:
        return b""


def kill_descendants(pid: int = 0, only: Callable[[bytes], bool] = lambda command: True) -> int:
    """SIGKILL the processes below ``pid`` (default: this one) whose command line ``only``
    accepts, children first; returns how many."""
    killed = 0
    for child in reversed(descendants(pid or os.getpid())):
        if not only(command_line(child)):
            continue
        try:
            os.kill(child, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends (prctl
    PR_SET_PDEATHSIG) — it fires even while this process holds the GIL in a long C call, which
    a watching thread cannot; elsewhere a no-op. The caller must start it from a thread that
    outlives the work (import workers are started and closed by one import)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def watch_parent(on_orphaned: Callable[[], None]) -> None:
    """Call ``on_orphaned`` (which must end the process) as soon as this process's parent is
    gone: it is re-parented, so ``getppid`` changes."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL_S)
        on_orphaned()

    threading.Thread(target=watch, name="deploylens-parent-watch", daemon=True).start()


def _is_ray(command: bytes) -> bool:
    return b"/ray/" in command or command.startswith(b"ray::")


def watchdog_main(argv: list[str]) -> int:
    """``python reaper.py PID SECONDS``: unless a line (or EOF) arrives on stdin within
    SECONDS, SIGKILL the Ray processes below PID. A start that hangs inside Ray's own code
    holds the interpreter lock of the process that called it, so no thread there can stop it:
    this process can."""
    import select
    import sys

    pid, seconds = int(argv[0]), float(argv[1])
    ready, _, _ = select.select([sys.stdin], [], [], seconds)
    if ready:
        return 0
    killed = kill_descendants(pid, _is_ray)
    sys.stderr.write(f"deploylens: Ray did not start in {seconds:.0f} s: {killed} killed\n")
    return 1


if __name__ == "__main__":
    import sys

    sys.exit(watchdog_main(sys.argv[1:]))
