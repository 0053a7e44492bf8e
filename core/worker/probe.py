"""What an interpreter has: Python, the packages DeployLens uses, ONNX Runtime providers, CUDA.

Fast enough for the ``hello`` handshake (no torch import: versions come from package metadata;
the CUDA driver is asked through ``libcuda`` with ctypes). Stdlib-only, Python 3.9 syntax.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import platform
import sys
from typing import Any

# import name -> (distribution names to try, pip requirement that provides it, what it is for)
KNOWN_PACKAGES: dict[str, Any] = {
    "numpy": (("numpy",), "numpy", "arrays everywhere"),
    "onnx": (("onnx",), "onnx", "reading ONNX models"),
    "onnxruntime": (
        ("onnxruntime", "onnxruntime-gpu"),
        "onnxruntime",
        "running and validating ONNX models, calibration",
    ),
    "torch": (("torch",), "torch==2.14.1", "exporting PyTorch models"),
    "torchvision": (("torchvision",), "torchvision==0.29.1", "torchvision models and ops"),
    "onnxscript": (("onnxscript",), "onnxscript", "the dynamo exporter's custom translations"),
    "onnxruntime_extensions": (
        ("onnxruntime-extensions",),
        "onnxruntime-extensions",
        "Python custom ops in ONNX Runtime",
    ),
    "tensorrt": (
        ("tensorrt", "tensorrt-cu12", "tensorrt-cu13", "tensorrt-cu12-bindings"),
        "tensorrt",
        "building and running TensorRT engines (needs NVIDIA's libraries and a GPU)",
    ),
    "tensorrt_rtx": (
        ("tensorrt-rtx-cu12", "tensorrt_rtx"),
        "tensorrt-rtx-cu12",
        "TensorRT-RTX: parsing and ahead-of-time engine builds, no GPU needed",
    ),
    "nvtx": (("nvtx",), "nvtx", "NVTX ranges in profiling runs"),
    "cuda": (("cuda-python", "cuda-bindings"), "cuda-python", "CUDA driver queries"),
    "platformdirs": (("platformdirs",), "platformdirs", "where outputs and caches go"),
    "tomli_w": (("tomli-w", "tomli_w"), "tomli-w", "writing settings, steps and projects"),
    "msgspec": (("msgspec",), "msgspec", "reading profiler traces"),
}
# What a worker needs for its jobs whatever the model: a training environment with torch alone
# met these one failed run at a time (onnx, then onnxruntime, then onnxscript …).
WORKER_NEEDS = ("numpy", "onnx", "onnxruntime", "onnxscript", "platformdirs", "tomli_w", "msgspec")
# Needs that serve only torch's exporter: an interpreter without torch (the packaged bundle,
# an ONNX-only venv) exports nowhere, so lacking them is not a failing worker.
TORCH_ONLY_NEEDS = ("onnxscript",)
# Version shown for a module that imports but has no pip metadata (a bundle may carry code only).
NO_METADATA = "(present, no pip metadata)"
# What a bundle says instead of a pip line (it takes no installs; another Python runs the job).
BUNDLE_HINT = (
    "choose the Python of your training environment (one that has it) in Preferences → "
    "Worker interpreter, or `deploylens env --python PATH` to check one"
)


def needs_given(has_torch: bool) -> tuple[str, ...]:
    """``WORKER_NEEDS`` for an interpreter with or without torch."""
    if has_torch:
        return WORKER_NEEDS
    return tuple(n for n in WORKER_NEEDS if n not in TORCH_ONLY_NEEDS)


def missing_needs() -> list[str]:
    """The worker's needs this interpreter lacks (``needs_given``)."""
    return [m for m in needs_given(_present("torch")) if not _present(m)]


def _present(module: str) -> bool:
    return installed_version(module) is not None


def installed_version(module: str) -> str | None:
    """The version of the package that provides ``module``, when ``module`` imports here.

    Metadata alone is not presence: a PyInstaller bundle carries dist-info of packages it
    excludes (torch's, from a dependency's hook) and code of packages without their dist-info."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, a module with __spec__ None
        found = False
    if not found:
        return None
    return distribution_version(KNOWN_PACKAGES[module][0]) or NO_METADATA


def requirement_for(module: str, torch_version: str | None = None) -> str:
    """The pip requirement that provides ``module`` here: torchvision pinned to the release
    the installed torch takes (torch 2.N pairs with torchvision 0.(N+15)), so installing it
    never replaces the user's torch and its CUDA libraries."""
    top = module.split(".")[0]
    if torch_version == NO_METADATA:
        torch_version = None
    if top == "torchvision" and torch_version:
        parts = torch_version.split("+")[0].split(".")
        if len(parts) >= 2 and parts[0] == "2" and parts[1].isdigit():
            return f"torchvision==0.{int(parts[1]) + 15}.*"
    if top == "torch" and torch_version:
        return f"torch=={torch_version.split('+')[0]}"
    known = KNOWN_PACKAGES.get(top)
    return known[1] if known else top.replace("_", "-")


def install_line(modules: Any, python: str | None = None, torch_version: Any = "") -> str:
    """One pip line for every module in ``modules`` (never one per failed run); torch's version
    is this interpreter's unless given (another interpreter's, from its probe)."""
    if torch_version == "":
        torch_version = installed_version("torch")
    wanted = []
    for module in modules:
        requirement = requirement_for(module, torch_version)
        if requirement not in wanted:
            wanted.append(requirement)
    quoted = " ".join(f"'{r}'" if "*" in r or "<" in r or ">" in r else r for r in wanted)
    return f"{python or sys.executable} -m pip install {quoted}"


def pip_install_line(module: str, python: str | None = None) -> str:
    """The exact command that installs ``module`` into ``python`` (default: this interpreter).
    A packaged bundle cannot take pip installs: it says where the module can come from."""
    requirement = requirement_for(module, installed_version("torch"))
    if getattr(sys, "frozen", False) and (python is None or python == sys.executable):
        return f"the DeployLens bundle does not include {requirement}: {BUNDLE_HINT}"
    return install_line([module, *[m for m in missing_needs() if m != module]], python)


def distribution_version(names: Any) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def python_info(full: bool = True) -> dict[str, Any]:
    """The interpreter that answers. ``full=False`` (the handshake, at every worker's start)
    leaves out ``platform``: ``platform.platform()`` scans the interpreter's binary for its libc
    and starts ``uname -p``, ~6 ms of CPU and a process per worker, and no reader of the
    handshake looks at it (``env.probe`` reports it)."""
    info = {
        "version": platform.python_version(),
        "version_info": list(sys.version_info[:3]),
        "executable": sys.executable,
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "host": platform.node(),  # which machine answered: a remote worker says so
    }
    if full:
        info["platform"] = platform.platform()
    return info


def onnxruntime_providers() -> list[str] | None:
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    try:
        import onnxruntime

        return list(onnxruntime.get_available_providers())
    except Exception as exc:  # a broken install must not break the handshake
        return [f"<import failed: {exc}>"]


def cuda_driver() -> dict[str, Any]:
    """The CUDA driver version and GPU names through libcuda, or why there is none."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return {"available": False, "reason": "no CUDA driver (libcuda) on this machine"}
    version = ctypes.c_int(0)
    if lib.cuInit(0) != 0:
        return {"available": False, "reason": "libcuda found but cuInit failed (no usable GPU)"}
    lib.cuDriverGetVersion(ctypes.byref(version))
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for index in range(count.value):
        device = ctypes.c_int(0)
        lib.cuDeviceGet(ctypes.byref(device), index)
        buffer = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(buffer, 256, device)
        devices.append(buffer.value.decode("utf-8", "replace"))
    return {
        "available": True,
        "driver_version": f"{version.value // 1000}.{(version.value % 1000) // 10}",
        "devices": devices,
    }


def deploylens_info() -> dict[str, Any]:
    """This DeployLens: its version and whether it runs from a packaged bundle."""
    try:
        version = importlib.metadata.version("deploylens")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"version": version, "frozen": bool(getattr(sys, "frozen", False))}


def probe_packages(deep: bool = True) -> dict[str, Any]:
    """Versions of the packages DeployLens uses (``None`` when missing), the CUDA driver and,
    when ``deep``, ONNX Runtime's providers — which means importing onnxruntime (~0.09 s), so the
    handshake every job's worker makes skips them (``env.probe`` and ``deploylens env`` ask)."""
    packages: dict[str, Any] = {}
    for module, (_dists, requirement, purpose) in KNOWN_PACKAGES.items():
        packages[module] = {
            "version": installed_version(module),
            "requirement": requirement,
            "purpose": purpose,
        }
    if deep:
        packages["onnxruntime"]["providers"] = onnxruntime_providers()
    packages["cuda_driver"] = cuda_driver()
    packages["deploylens"] = deploylens_info()
    return packages


def environment_report(deep: bool = True) -> dict[str, Any]:
    """The interpreter, its packages, the CUDA driver and this DeployLens, each under its own
    key (``core.environment.Environment``; the handshake keeps the last two among the
    packages)."""
    packages = probe_packages(deep)
    cuda, ours = packages.pop("cuda_driver"), packages.pop("deploylens")
    return {"python": python_info(), "packages": packages, "cuda_driver": cuda, "deploylens": ours}
