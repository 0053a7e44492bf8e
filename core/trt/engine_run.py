"""Running a deserialized engine with TensorRT's ``IProfiler``: the outputs of the last run and
every layer's time per run, for validate's TensorRT column and ``profile --backend trt``."""

from __future__ import annotations

from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trt.callbacks import make_profiler


def run_engine(
    trt: Any, engine: Any, feeds: dict[str, Any], device: Any, iterations: int = 10
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Execute ``iterations`` times with an ``IProfiler``; outputs of the last run and the
    per-layer times (ms) TensorRT reported."""
    import numpy as np

    context = engine.create_execution_context()
    profiler, times = make_profiler(trt)
    context.profiler = profiler
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    outputs: dict[str, tuple[tuple[int, ...], Any]] = {}
    for name in names:
        if engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT:
            if name not in feeds:
                raise UserError(f"No data for the engine input '{name}'.")
            context.set_input_shape(name, tuple(feeds[name].shape))
            context.set_tensor_address(name, device.upload(name, feeds[name]))
    for name in names:
        if engine.get_tensor_mode(name) != trt.TensorIOMode.INPUT:
            shape = tuple(context.get_tensor_shape(name))
            dtype = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
            nbytes = int(np.prod(shape)) * dtype.itemsize
            context.set_tensor_address(name, device.buffer(name, nbytes))
            outputs[name] = (shape, dtype)
    for _ in range(iterations):
        if not context.execute_async_v3(device.stream_handle):
            raise UserError("TensorRT failed to execute the engine (see the log).")
        device.synchronize()
    results = {
        name: device.download(name, shape, dtype) for name, (shape, dtype) in outputs.items()
    }
    return results, times
