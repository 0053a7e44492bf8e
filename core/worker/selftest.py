"""Jobs that exercise every path of the worker: used by Preferences to check an interpreter
and by the tests, which run them in a real worker process."""

from __future__ import annotations

import ctypes
import importlib
import os
import time
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.worker.probe import environment_report


def probe_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Deep probe: what the handshake says, plus torch's own view of CUDA when torch is there
    (the app reads it as ``core.environment.Environment``)."""
    report = environment_report()
    if params.get("torch") and report["packages"]["torch"]["version"]:
        ctx.progress(0.5, "importing torch")
        try:
            import torch

            report["torch"] = {
                "version": torch.__version__,
                "cuda_build": torch.version.cuda,
                "cuda_available": bool(torch.cuda.is_available()),
                "devices": [
                    torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
                ],
            }
        except Exception as exc:  # a broken torch is a finding, not a crash
            report["torch"] = {"error": f"{type(exc).__name__}: {exc}"}
    return report


def echo_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    return {"params": params, "pid": os.getpid()}


def progress_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    steps = int(params.get("steps", 5))
    for step in range(steps):
        ctx.progress((step + 1) / steps, f"step {step + 1} of {steps}")
        time.sleep(float(params.get("delay", 0.0)))
    ctx.log("done counting")
    return {"steps": steps}


def noisy_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Writes to stdout from Python and to fd 1 directly, as C libraries do."""
    print("stray print from a job {}")
    os.write(1, b"raw bytes on fd 1 from native code\n{not json\n")
    libc = ctypes.CDLL(None)
    libc.puts(b"puts() from libc")
    libc.fflush(None)
    return {"ok": True}


def segfault_job(ctx: Any, params: dict[str, Any]) -> None:
    ctx.progress(0.1, "about to crash")
    ctypes.string_at(0)


def import_job(ctx: Any, params: dict[str, Any]) -> str:
    module = importlib.import_module(str(params["module"]))
    return getattr(module, "__name__", "")


def user_error_job(ctx: Any, params: dict[str, Any]) -> None:
    raise UserError(str(params.get("message", "the input is wrong")), str(params.get("hint", "")))


def bug_job(ctx: Any, params: dict[str, Any]) -> None:
    return {"divide": 1 / 0}  # type: ignore[return-value]


def sleep_job(ctx: Any, params: dict[str, Any]) -> None:
    """Sleeps without ever checking for cancellation: only terminate can stop it."""
    ctx.progress(0.0, "sleeping")
    time.sleep(float(params.get("seconds", 60)))


def array_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Big arrays travel as .npz files beside the JSON, never inside it."""
    import numpy as np

    path = os.path.join(ctx.workdir, "array.npz")
    np.savez(path, values=np.arange(int(params.get("n", 10)), dtype=np.float32))
    return {"npz": path}


class _Marked:
    """Writes its file when freed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __del__(self) -> None:
        with open(self.path, "w") as marker:
            marker.write("freed")


def keep_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Hands ``ctx.keep`` a value that writes ``marker`` when freed; says whether ``check``
    (the previous run's marker) exists as this job runs. The tests' own: like every self-test
    it has no request class, so no steps file, project or CLI line can start it."""
    ctx.keep(_Marked(str(params["marker"])))
    return {"freed_before": os.path.exists(str(params["check"]))}
