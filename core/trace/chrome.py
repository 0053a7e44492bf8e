"""Chrome-trace importers: PyTorch profiler / Kineto traces (new category names ``kernel``,
``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``, ``cuda_driver``, ``cpu_op``,
``user_annotation``, ``gpu_user_annotation``; older ``Kernel``, ``Memcpy``, ``Memset``,
``Runtime``, ``Operator``) and ONNX Runtime profiles (``<node>_kernel_time`` events with the op
and provider in ``args``). Both are streamed (``json_stream``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from deploylens.core.trace.json_stream import iter_events
from deploylens.core.trace.model import KIND, Lane, Trace, TraceBuilder

CATEGORY = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_runtime": "cuda_api",
    "runtime": "cuda_api",
    "cuda_driver": "cuda_api",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "python_function": "cpu_op",
    "user_annotation": "nvtx",
    "gpu_user_annotation": "nvtx",
    "node": "ort_node",
    "session": "cpu_op",
}
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "gpu_user_annotation"}
_COPY = re.compile(r"(HtoD|DtoH|DtoD|PtoP|HtoH)", re.IGNORECASE)
_MEMKINDS = re.compile(r"\(([A-Za-z]+) -> ([A-Za-z]+)\)")
COPY_KIND = {"htod": "memcpy_h2d", "dtoh": "memcpy_d2h", "dtod": "memcpy_d2d", "ptop": "memcpy_p2p"}


def _int(value: Any, default: int = -1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        digits = re.findall(r"\d+", str(value))
        return int(digits[-1]) if digits else default


def _ns(value: Any) -> int:
    """Microseconds as JSON text (kept as a string by the decoder) → integer nanoseconds, exactly:
    a float64 of an epoch-based ``ts`` would round to ~0.25 µs."""
    if isinstance(value, int):
        return value * 1000
    whole, _, fraction = str(value).partition(".")
    if "e" in whole.lower() or "e" in fraction.lower():
        return round(float(value) * 1000)
    sign = -1 if whole.startswith("-") else 1
    return int(whole or 0) * 1000 + sign * int((fraction + "000")[:3])


def load_chrome(path: str | Path, progress: Any = None) -> Trace:
    builder = TraceBuilder()
    process_names: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    fmt = "chrome"
    counter = [0]
    for event in iter_events(path, counter):
        phase = event.get("ph")
        if phase == "M":
            args = event.get("args") or {}
            if event.get("name") == "process_name":
                process_names[_int(event.get("pid"))] = str(args.get("name", ""))
            elif event.get("name") == "thread_name":
                thread_names[(_int(event.get("pid")), _int(event.get("tid")))] = str(
                    args.get("name", "")
                )
            continue
        if phase != "X":
            continue  # flows (ac2g), counters, instants: the correlation id carries the link
        category = str(event.get("cat", "")).lower()
        name = str(event.get("name", ""))
        kind = CATEGORY.get(category, "other")
        args = event.get("args") or {}
        if kind == "ort_node":
            fmt = "onnxruntime"
            if not name.endswith("_kernel_time"):
                continue  # fence_before/after: ORT's own bookkeeping
            name = name[: -len("_kernel_time")]
        start, dur = _ns(event.get("ts", 0)), _ns(event.get("dur", 0))
        pid, tid = _int(event.get("pid"), 0), _int(event.get("tid"), 0)
        detail = ""
        nbytes = 0
        if category in GPU_CATEGORIES:
            fmt = "kineto"
            device = _int(args.get("device", pid), 0)
            stream = _int(args.get("stream", tid), 0)
            lane = Lane(f"GPU {device}", f"stream {stream}", device, stream)
            if kind == "nvtx":
                lane = Lane(f"GPU {device}", f"annotations stream {stream}", device, stream)
        elif kind == "nvtx":
            lane = Lane(
                f"process {pid}", f"annotations {thread_names.get((pid, tid)) or f'thread {tid}'}"
            )
        else:
            lane = Lane(
                process_names.get(pid) or f"process {pid}",
                thread_names.get((pid, tid)) or f"thread {tid}",
            )
        if kind == "memcpy":
            found = _COPY.search(name)
            kind = COPY_KIND.get(found.group(1).lower(), "memcpy") if found else "memcpy"
            kinds = _MEMKINDS.search(name)
            detail = f"{kinds.group(1)} → {kinds.group(2)}" if kinds else ""
            nbytes = _int(args.get("bytes"), 0)
        elif kind == "memset":
            nbytes = _int(args.get("bytes"), 0)
        elif kind == "kernel" and "grid" in args:
            detail = f"grid {tuple(args['grid'])} block {tuple(args.get('block', ()))}"
        elif kind == "ort_node":
            detail = f"{args.get('op_name', '')} on {args.get('provider', '')}".strip()
        builder.add(
            start,
            dur,
            builder.lane(lane),
            KIND[kind],
            name,
            _int(args.get("correlation", -1)),
            nbytes,
            detail,
        )
        if progress is not None and len(builder) % 200_000 == 0:
            progress(counter[0], f"{len(builder):,} events")
    builder.meta.update(source=str(path), format=fmt)
    return builder.finish()
