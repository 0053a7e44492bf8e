"""One OpenBLAS thread in DeployLens's own processes, unless the user chose a count.

numpy's OpenBLAS starts a thread per core when numpy is imported, and each spare thread spins
before it sleeps: ``import numpy`` and half a second of idling cost 0.19 s of CPU on the 2-core
machine, 0.09 s with one thread. Our processes use BLAS only for small or memory-bound work
(the comparisons' dot products, the graph's arrays), where a second thread saves no wall time.
OpenBLAS reads the variable once, when numpy loads it: set it before anything imports numpy.
ONNX Runtime and x86 torch (MKL) keep their own pools; a torch built on OpenBLAS (aarch64
wheels) reads it too."""

from __future__ import annotations

from collections.abc import MutableMapping

BLAS_THREADS_VAR = "OPENBLAS_NUM_THREADS"


def one_blas_thread(env: MutableMapping[str, str]) -> None:
    """One OpenBLAS thread in ``env`` (``os.environ``, or a child's environment); a value the
    user set wins."""
    env.setdefault(BLAS_THREADS_VAR, "1")
