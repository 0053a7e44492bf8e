"""Run native code that a malformed model can crash (onnx's checker and shape inference abort
the interpreter on some inputs: a failed C++ assertion in a Slice/Reshape inference function
on negative dims) in a forked child, so the caller gets an answer or a sentence, never a dead
process. ``fork`` shares the parsed model copy-on-write: a few milliseconds, no re-parse."""

from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
TIMEOUT_S = 120.0
_IN_CHILD = False


def in_isolated_child() -> bool:
    """True inside ``run_isolated``'s forked child: its objects are a copy about to be thrown
    away, so a function may change them in place instead of copying them first."""
    return _IN_CHILD


@dataclass
class Crashed:
    """What became of a child that did not answer."""

    reason: str  # "SIGABRT", "timed out after 120 s", "exit code 3"


def run_isolated(function: Callable[..., T], *args: Any, timeout: float = TIMEOUT_S) -> T | Crashed:
    """``function(*args)`` in a forked child; its return value (pickled back) or ``Crashed``.
    Exceptions raised by ``function`` are re-raised here. Without ``fork`` it runs in-process."""
    if not hasattr(os, "fork"):
        return function(*args)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # 3.12 warns when other threads exist (the GUI's): the child only runs ``function``
        # and leaves through os._exit, and a stuck child is killed at ``timeout``.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, then leave without cleanup handlers
        global _IN_CHILD
        _IN_CHILD = True
        os.close(read_end)
        quiet = os.open(os.devnull, os.O_WRONLY)  # a C++ assertion's text is not the user's
        os.dup2(quiet, 2)
        faulthandler.disable()  # the parent reports the crash; no second report from here
        try:
            try:
                payload = pickle.dumps(("ok", function(*args)))
            except BaseException as exc:
                try:
                    payload = pickle.dumps(("raised", exc))
                except Exception:  # an exception that does not pickle: its words do
                    payload = pickle.dumps(("raised", RuntimeError(f"{type(exc).__name__}: {exc}")))
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Crashed(f"timed out after {timeout:g} s")
            ready, _, _ = select.select([read_end], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(read_end, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        try:
            name = signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            name = f"signal {os.WTERMSIG(status)}"
        return Crashed(name)
    if not chunks:
        return Crashed(f"exit code {os.WEXITSTATUS(status)}")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        raise value
    result: T | Crashed = value
    return result
