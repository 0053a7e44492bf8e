"""ONNX Runtime's kernels per execution provider, with version ranges and types."""

from __future__ import annotations

from typing import Any

OPEN_ENDED = 2147483647  # ORT's upper bound for "still current"


def ort_kernels() -> dict[str, Any]:
    try:
        import onnxruntime
        from onnxruntime.capi import _pybind_state
    except ImportError as exc:
        return {"available": False, "reason": f"onnxruntime is not importable here: {exc}"}
    kernels = []
    for kernel in _pybind_state.get_all_opkernel_def():
        start, end = kernel.version_range
        kernels.append(
            {
                "op": kernel.op_name,
                "domain": kernel.domain or "ai.onnx",
                "start": int(start),
                "end": None if end >= OPEN_ENDED else int(end),
                "provider": kernel.provider,
                "types": {k: list(v) for k, v in kernel.type_constraints.items()},
            }
        )
    return {
        "available": True,
        "version": onnxruntime.__version__,
        "providers": list(onnxruntime.get_available_providers()),
        "kernels": kernels,
    }
