"""Importing TensorRT (classic ``tensorrt`` or ``tensorrt_rtx``), or saying exactly what is
missing, how to get it, and — where only TensorRT-RTX is installed — the route that works."""

from __future__ import annotations

from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trt.flags import RTX, family

CLASSIC, RTX_MODULE = "tensorrt", "tensorrt_rtx"
PIP = {CLASSIC: "tensorrt", RTX_MODULE: "tensorrt-rtx-cu12"}


def load_tensorrt(module: str = CLASSIC, purpose: str = "build") -> Any:
    """Import ``tensorrt`` (or ``tensorrt_rtx``) or say exactly what is missing and how to get
    it; ``purpose`` ("build" or "parse": ``support --target trt-live``) picks the route to offer
    where only TensorRT-RTX is there (a parse never takes --target-cc, a build flag)."""
    import importlib
    import importlib.util

    product = "TensorRT-RTX" if module == RTX_MODULE else "TensorRT"
    if importlib.util.find_spec(module) is None:
        from deploylens.core.worker.probe import pip_install_line

        where = (
            "(any Linux or Windows machine: it builds ahead of time without a GPU)"
            if module == RTX_MODULE
            else "(Linux or Windows with an NVIDIA GPU and driver)"
        )
        if module == CLASSIC and importlib.util.find_spec(RTX_MODULE) is not None:
            raise UserError(
                "TensorRT's Python package 'tensorrt' is not installed in the worker interpreter, "
                "but TensorRT-RTX is: it parses the model and builds real plans here, ahead of "
                "time for named GPUs, with no GPU needed.",
                (
                    "Ask TensorRT-RTX's parser instead: --target trt-rtx (or trt-rtx-measured); "
                    if purpose == "parse"
                    else "Build with TensorRT-RTX: add --target-cc sm89 (or sm75, sm80, sm86, "
                    "sm120; --trt-version rtx), or the Build panel's 'Build (ahead of time)'; "
                )
                + f"for classic TensorRT: {pip_install_line(PIP[module])} {where}",
            )
        raise UserError(
            f"{product}'s Python package '{module}' is not installed in the worker interpreter, "
            "so engines cannot be built nor parsed here. Settings, the trtexec/Polygraphy "
            "commands, the build script and engine/profile import all work without it.",
            f"{pip_install_line(PIP[module])} {where}, "
            "or pick a worker interpreter that has it in Preferences",
        )
    try:
        return importlib.import_module(module)
    except (ImportError, OSError) as exc:
        raise UserError(
            f"The '{module}' package is installed but its libraries do not load: {exc}.",
            f"reinstall {PIP[module]} so its -libs package matches, and check the CUDA driver",
        ) from None


def module_for(version: str) -> str:
    """Which TensorRT module builds for ``version`` (a settings release: 10.16, rtx …)."""
    try:
        return RTX_MODULE if family(version) == RTX else CLASSIC
    except ValueError:
        return CLASSIC
