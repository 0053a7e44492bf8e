"""One way for every benchmark to run a command and say what it cost: wall seconds beside CPU
seconds (user + sys of the whole process tree, as ``/usr/bin/time`` counts them) and the peak
RSS of the largest process in it. On a shared machine the wall figure moves with the load; the
CPU figure moves little, so targets are CPU ratios (PLATFORM.md, measured 2026-11-28).

    from measure import run_measured
    run = run_measured([sys.executable, "-c", "pass"])
    run.wall_s, run.cpu_s, run.peak_mb, run.rc, run.stdout
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Linux hands a process its parent's peak RSS at exec (the old address space's high-water mark
# goes into the new process's ru_maxrss), so a command started from a bench that holds a few
# hundred MB reports at least that. A small interpreter starts the command and reports the
# wait4 rusage of that command alone: its peak starts from the launcher's ~10 MB.
LAUNCHER = """
import json, os, sys, time
report, command = int(sys.argv[1]), sys.argv[2:]
os.set_inheritable(report, False)  # a daemon the command leaves must not hold the report open
started = time.perf_counter()  # the command's wall time, not this interpreter's start
pid = os.posix_spawnp(command[0], command, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
cpu = usage.ru_utime + usage.ru_stime
os.write(report, json.dumps([status, cpu, usage.ru_maxrss, wall]).encode())
"""


@dataclass
class Measured:
    rc: int
    wall_s: float
    cpu_s: float  # user + sys of the process and every descendant it waited for
    peak_mb: float  # the largest resident set among them
    stdout: str
    stderr: str
    timed_out: bool = False


def run_measured(
    command: list[str],
    timeout: float = 900.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Measured:
    """Run ``command`` to its end (killed with its process group past ``timeout``); its
    rusage comes from ``wait4`` on that one command (in LAUNCHER), so neither concurrent work
    of the caller's other children nor the caller's own peak RSS is counted."""
    report_read, report_write = os.pipe()
    os.set_inheritable(report_write, True)
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(report_write), *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(report_write,),
        )
    finally:
        os.close(report_write)
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=lambda: out.append(process.stdout.read()), daemon=True),  # type: ignore[union-attr]
        threading.Thread(target=lambda: err.append(process.stderr.read()), daemon=True),  # type: ignore[union-attr]
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    timer = threading.Timer(timeout, lambda: _kill_group(process.pid))
    timer.start()
    try:
        _, launcher_status, _ = os.wait4(process.pid, 0)
    finally:
        timer.cancel()
        with os.fdopen(report_read, "rb") as pipe:
            report = pipe.read()
    wall = time.perf_counter() - started
    if time.perf_counter() - started >= timeout:
        timed_out = True
    _kill_group(process.pid)  # anything it left behind in its group
    for reader in readers:
        reader.join(timeout=10)
    if report:
        status, cpu_s, maxrss_kb, wall = json.loads(report)
        rc = os.waitstatus_to_exitcode(status)
    else:  # the launcher itself was killed (timeout) or could not start the command
        rc, cpu_s, maxrss_kb = os.waitstatus_to_exitcode(launcher_status), 0.0, 0
    process.returncode = rc
    return Measured(
        rc=rc,
        wall_s=wall,
        cpu_s=cpu_s,
        peak_mb=maxrss_kb / 1024,
        stdout=(out[0] if out else b"").decode("utf-8", "replace"),
        stderr=(err[0] if err else b"").decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Span:
    wall_s: float = 0.0
    cpu_s: float = 0.0


@contextmanager
def measured_here() -> Iterator[Span]:
    """Wall and CPU seconds of a block run in this process (and children it waited for)."""
    span = Span()
    before = _cpu()
    started = time.perf_counter()
    try:
        yield span
    finally:
        span.wall_s = time.perf_counter() - started
        span.cpu_s = _cpu() - before


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + sys, with the children it reaped) of a running process we did not
    wait for — a warm worker — from ``/proc/PID/stat``; read it before and after a job."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")
