"""A recording proxy around a TensorRT module — the real ``tensorrt_rtx`` or the recording fake —
so one scenario can be run against both and the calls the adapter made compared call by call.

It records what crosses from DeployLens into TensorRT: constructors (``Builder(logger)``), module
functions, method calls and attribute writes on the objects they return, with arguments
normalised (enum members by name, buffers by length, paths by file name, our callback objects by
the TensorRT base class they derive from). Values TensorRT hands back are unwrapped before they
go back into TensorRT, so the real C++ bindings only ever see their own objects.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

# Objects returned by the API that are themselves API objects worth recording calls on.
API_TYPES = {
    "Builder",
    "INetworkDefinition",
    "IBuilderConfig",
    "OnnxParser",
    "ParserError",
    "IOptimizationProfile",
    "ITimingCache",
    "IPluginRegistry",
    "ITensor",
    "Runtime",
}
CONSTRUCTORS = ("Builder", "OnnxParser", "Runtime")
FUNCTIONS = ("init_libnvinfer_plugins", "get_plugin_registry")
CALLBACK_BASES = ("ILogger", "IProgressMonitor", "IProfiler")


class Recorder:
    def __init__(self, trt: Any) -> None:
        self.trt = trt
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def norm(self, value: Any) -> Any:
        """A value as it is compared across the real module and the fake."""
        if isinstance(value, _ObjectProxy):
            return f"<{value._api_name}>"
        if isinstance(value, enum.Enum) or _is_pybind_enum(value):  # before int: IntEnum is one
            return f"{type(value).__name__}.{value.name}"
        if isinstance(value, bool | int | float) or value is None:
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<{len(bytes(value))} bytes>"
        if isinstance(value, str):
            return f"<file {Path(value).name}>" if "/" in value else value
        if isinstance(value, list | tuple):
            return [self.norm(v) for v in value]
        for base in CALLBACK_BASES:
            cls = getattr(self.trt, base, None)
            if isinstance(cls, type) and isinstance(value, cls):
                return f"<{base} subclass>"
        return f"<{type(value).__name__}>"

    def record(self, name: str, args: tuple[Any, ...]) -> None:
        self.calls.append((name, tuple(self.norm(a) for a in args)))

    def wrap(self, value: Any) -> Any:
        if type(value).__name__ in API_TYPES:
            return _ObjectProxy(value, self)
        return value


def _is_pybind_enum(value: Any) -> bool:
    return hasattr(value, "name") and hasattr(type(value), "__members__")


def _unwrap(value: Any) -> Any:
    if isinstance(value, _ObjectProxy):
        return value._real
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    return value


class _ObjectProxy:
    def __init__(self, real: Any, recorder: Recorder) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "_api_name", type(real).__name__)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._real, name)
        if callable(value):

            def call(*args: Any) -> Any:
                self._recorder.record(f"{self._api_name}.{name}", args)
                return self._recorder.wrap(value(*(_unwrap(a) for a in args)))

            return call
        self._recorder.record(f"{self._api_name}.{name}?", ())  # a property read
        return self._recorder.wrap(value)

    def __setattr__(self, name: str, value: Any) -> None:
        self._recorder.record(f"{self._api_name}.{name}=", (value,))
        setattr(self._real, name, _unwrap(value))


class RecordedModule:
    """Stands where the adapter expects the TensorRT module; ``recorder.calls`` is the log."""

    def __init__(self, trt: Any) -> None:
        self.recorder = Recorder(trt)
        self._trt = trt
        self.__name__ = getattr(trt, "__name__", "tensorrt")
        self.__version__ = trt.__version__

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._trt, name)
        if name in CONSTRUCTORS or name in FUNCTIONS:
            recorder = self.recorder

            def call(*args: Any) -> Any:
                recorder.record(name, args)
                return recorder.wrap(value(*(_unwrap(a) for a in args)))

            return call
        return value  # enums, dtypes, and the callback base classes the adapter subclasses
