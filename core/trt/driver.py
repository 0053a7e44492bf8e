"""Whether this machine has an NVIDIA driver — without importing CUDA, torch or numpy."""

from __future__ import annotations


def cuda_driver_present() -> bool:
    """Whether an NVIDIA driver's CUDA library loads here (no GPU machine has it): a plan built
    ahead of time is not even read back to be inspected where none does."""
    import ctypes
    import sys

    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True
