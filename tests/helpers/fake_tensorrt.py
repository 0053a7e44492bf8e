"""FakeTensorRT — a RECORDING FAKE standing in for NVIDIA's ``tensorrt`` module, which cannot be
installed in this workplace (its libraries are not on the package registry) and needs a GPU.

It models only what the adapter's contract needs, per release (8.6, 10.x, 11.x), following the
documented Python API: which enums and classes exist in which release, what ``set_flag`` and
attribute writes are accepted, and the callbacks TensorRT makes (logger, ``IProgressMonitor``,
INT8 calibrator, ``IProfiler``). Every call lands in ``calls`` so tests assert the exact API use.
It proves the adapter speaks the documented API; it proves nothing about TensorRT itself.
"""

from __future__ import annotations

import enum
import json
from types import SimpleNamespace
from typing import Any

import numpy as np


def make_fake_tensorrt(
    version: str,
    *,
    parse_ok: bool = True,
    build_ok: bool = True,
    layers: list[str] | None = None,
    steps: int = 4,
) -> Any:
    fam = "11" if version.startswith("11") else "10" if version.startswith(("9", "10")) else "8.6"
    calls: list[tuple[str, Any]] = []
    trt = SimpleNamespace(__version__=version, calls=calls)
    layer_names = layers or ["/stem/conv/Conv + /stem/relu/Relu", "/head/fc/Gemm"]

    flags = ["TF32", "REFIT", "GPU_FALLBACK", "SPARSE_WEIGHTS", "VERSION_COMPATIBLE", "DIRECT_IO"]
    if fam != "11":
        flags += ["FP16", "INT8", "OBEY_PRECISION_CONSTRAINTS", "PREFER_PRECISION_CONSTRAINTS"]
    if fam == "10":
        flags += ["BF16", "FP8"]
    if fam != "8.6":
        flags += ["STRIP_PLAN"]
    trt.BuilderFlag = enum.IntEnum("BuilderFlag", flags, start=0)
    creation = ["EXPLICIT_BATCH"] if fam == "8.6" else ["EXPLICIT_BATCH", "STRONGLY_TYPED"]
    trt.NetworkDefinitionCreationFlag = enum.IntEnum(
        "NetworkDefinitionCreationFlag", creation, start=0
    )
    trt.MemoryPoolType = enum.IntEnum(
        "MemoryPoolType",
        [
            "WORKSPACE",
            "DLA_MANAGED_SRAM",
            "DLA_LOCAL_DRAM",
            "DLA_GLOBAL_DRAM",
            "TACTIC_SHARED_MEMORY",
        ],
        start=0,
    )
    trt.TacticSource = enum.IntEnum(
        "TacticSource",
        ["CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"],
        start=0,
    )
    trt.DeviceType = enum.IntEnum("DeviceType", ["GPU", "DLA"], start=0)
    trt.HardwareCompatibilityLevel = enum.IntEnum(
        "HardwareCompatibilityLevel", ["NONE", "AMPERE_PLUS", "SAME_COMPUTE_CAPABILITY"], start=0
    )
    trt.ProfilingVerbosity = enum.IntEnum(
        "ProfilingVerbosity", ["LAYER_NAMES_ONLY", "NONE", "DETAILED"], start=0
    )
    trt.LayerInformationFormat = enum.IntEnum(
        "LayerInformationFormat", ["ONELINE", "JSON"], start=0
    )
    trt.TensorIOMode = enum.IntEnum("TensorIOMode", ["NONE", "INPUT", "OUTPUT"], start=0)
    trt.float32, trt.float16, trt.int8 = "float32", "float16", "int8"
    trt.nptype = lambda t: {"float32": np.float32, "float16": np.float16, "int8": np.int8}[t]

    class ILogger:
        Severity = enum.IntEnum(
            "Severity", ["INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE"], start=0
        )

        def __init__(self) -> None:
            calls.append(("ILogger.__init__", None))

    trt.ILogger = ILogger

    class IProfiler:
        def __init__(self) -> None:
            calls.append(("IProfiler.__init__", None))

    trt.IProfiler = IProfiler
    if fam != "8.6":

        class IProgressMonitor:
            def __init__(self) -> None:
                calls.append(("IProgressMonitor.__init__", None))

        trt.IProgressMonitor = IProgressMonitor
    if fam != "11":
        for name in ("IInt8EntropyCalibrator2", "IInt8MinMaxCalibrator"):
            trt.__dict__[name] = type(
                name, (), {"__init__": lambda self, n=name: calls.append((f"{n}.__init__", None))}
            )

    trt.init_libnvinfer_plugins = lambda logger, namespace: calls.append(
        ("init_libnvinfer_plugins", namespace)
    )
    registry = SimpleNamespace(
        load_library=lambda path: calls.append(("IPluginRegistry.load_library", path))
    )
    trt.get_plugin_registry = lambda: registry

    class Layer:
        def __init__(self, name: str) -> None:
            self.name, self.num_outputs = name, 1
            self.__dict__["precision"] = None

        def __setattr__(self, key: str, value: Any) -> None:
            if key == "precision":
                if fam == "11":
                    raise AttributeError("ILayer.precision was removed in TensorRT 11")
                calls.append(("ILayer.precision", (self.name, value)))
            object.__setattr__(self, key, value)

        def set_output_type(self, index: int, dtype: Any) -> None:
            if fam == "11":
                raise AttributeError("ILayer.set_output_type was removed in TensorRT 11")
            calls.append(("ILayer.set_output_type", (self.name, index, dtype)))

    class Network:
        def __init__(self, flags: int) -> None:
            self.flags = flags
            self._layers = [Layer(n) for n in layer_names]

        @property
        def num_layers(self) -> int:
            return len(self._layers)

        def get_layer(self, index: int) -> Layer:
            return self._layers[index]

    class ParserError:
        def desc(self) -> str:
            return "No importer registered for op: FancyOp"

        def node_name(self) -> str:
            return "fancy_1"

        def node_operator(self) -> str:
            return "FancyOp"

    class OnnxParser:
        def __init__(self, network: Network, logger: ILogger) -> None:
            calls.append(("OnnxParser", None))
            self.num_errors = 0 if parse_ok else 1

        def parse_from_file(self, path: str) -> bool:
            calls.append(("OnnxParser.parse_from_file", path))
            return parse_ok

        def get_error(self, index: int) -> ParserError:
            return ParserError()

    trt.OnnxParser = OnnxParser

    config_attrs = {
        "builder_optimization_level",
        "default_device_type",
        "DLA_core",
        "profiling_verbosity",
        "hardware_compatibility_level",
        "max_aux_streams",
    }
    if fam != "8.6":
        config_attrs.add("progress_monitor")
    if fam != "11":
        config_attrs.add("int8_calibrator")

    class TimingCache:
        def __init__(self, data: bytes) -> None:
            self.data = data or b"fake-timing-cache"

        def serialize(self) -> bytes:
            return self.data + b"+"

    class Config:
        def __init__(self) -> None:
            object.__setattr__(self, "values", {})
            object.__setattr__(self, "tactics", 0b111)

        def __setattr__(self, key: str, value: Any) -> None:
            if key not in config_attrs:
                raise AttributeError(
                    f"'IBuilderConfig' object has no attribute '{key}' (TensorRT {version})"
                )
            calls.append((f"IBuilderConfig.{key}", value))
            self.values[key] = value

        def set_flag(self, flag: Any) -> None:
            calls.append(("IBuilderConfig.set_flag", flag.name))

        def clear_flag(self, flag: Any) -> None:
            calls.append(("IBuilderConfig.clear_flag", flag.name))

        def set_memory_pool_limit(self, pool: Any, size: int) -> None:
            calls.append(("IBuilderConfig.set_memory_pool_limit", (pool.name, size)))

        def add_optimization_profile(self, profile: Any) -> None:
            calls.append(("IBuilderConfig.add_optimization_profile", profile.shapes))

        def create_timing_cache(self, data: bytes) -> TimingCache:
            calls.append(("IBuilderConfig.create_timing_cache", bytes(data)))
            self.values["cache"] = TimingCache(bytes(data))
            return self.values["cache"]

        def set_timing_cache(self, cache: TimingCache, ignore_mismatch: bool) -> None:
            calls.append(("IBuilderConfig.set_timing_cache", ignore_mismatch))

        def get_timing_cache(self) -> TimingCache:
            return self.values["cache"]

        def get_tactic_sources(self) -> int:
            return self.tactics

        def set_tactic_sources(self, mask: int) -> None:
            calls.append(("IBuilderConfig.set_tactic_sources", mask))

    class Profile:
        def __init__(self) -> None:
            self.shapes: dict[str, tuple] = {}

        def set_shape(self, name: str, low: Any, opt: Any, high: Any) -> None:
            self.shapes[name] = (tuple(low), tuple(opt), tuple(high))

    class Builder:
        def __init__(self, logger: ILogger) -> None:
            calls.append(("Builder", None))
            self.logger = logger

        def create_network(self, flags: int = 0) -> Network:
            calls.append(("Builder.create_network", flags))
            return Network(flags)

        def create_builder_config(self) -> Config:
            return Config()

        def create_optimization_profile(self) -> Profile:
            return Profile()

        def build_serialized_network(self, network: Network, config: Config) -> bytes | None:
            calls.append(("Builder.build_serialized_network", None))
            self.logger.log(ILogger.Severity.INFO, "fake build started")
            monitor = config.values.get("progress_monitor")
            if monitor is not None:
                monitor.phase_start("Building engine", None, steps)
                monitor.phase_start("Tactic timing", "Building engine", 2)
                monitor.step_complete("Tactic timing", 0)
                monitor.phase_finish("Tactic timing")
                for step in range(steps):
                    if not monitor.step_complete("Building engine", step):
                        calls.append(("build cancelled at step", step))
                        monitor.phase_finish("Building engine")
                        return None
                monitor.phase_finish("Building engine")
            calibrator = config.values.get("int8_calibrator")
            if calibrator is not None:
                cached = calibrator.read_calibration_cache()
                calls.append(("calibrator.read_calibration_cache", cached))
                if cached is None:
                    calls.append(("calibrator.get_batch_size", calibrator.get_batch_size()))
                    while (pointers := calibrator.get_batch(["image"])) is not None:
                        calls.append(("calibrator.get_batch", pointers))
                    calibrator.write_calibration_cache(f"TRT-{version}-fake\n".encode())
            if not build_ok:
                self.logger.log(ILogger.Severity.ERROR, "fake: no implementation for layer X")
                return None
            return b"FAKEENGINE" + json.dumps(network.flags).encode()

    trt.Builder = Builder

    class Inspector:
        def get_engine_information(self, fmt: Any) -> str:
            calls.append(("IEngineInspector.get_engine_information", fmt.name))
            return json.dumps(
                {
                    "Layers": [
                        {
                            "Name": n,
                            "LayerType": "CaskConvolution",
                            "Outputs": [
                                {
                                    "Name": "t",
                                    "Dimensions": [1],
                                    "Format/Datatype": "Row major linear FP32",
                                }
                            ],
                        }
                        for n in layer_names
                    ],
                    "Bindings": ["image", "output"],
                }
            )

    class Context:
        def __init__(self) -> None:
            self.profiler = None
            self.shapes: dict[str, tuple] = {}

        def set_input_shape(self, name: str, shape: tuple) -> None:
            calls.append(("IExecutionContext.set_input_shape", (name, shape)))
            self.shapes[name] = shape

        def set_tensor_address(self, name: str, address: int) -> None:
            calls.append(("IExecutionContext.set_tensor_address", name))

        def get_tensor_shape(self, name: str) -> tuple:
            return (1, 10)

        def execute_async_v3(self, stream: int) -> bool:
            calls.append(("IExecutionContext.execute_async_v3", stream))
            for number, layer in enumerate(layer_names):
                self.profiler.report_layer_time(layer, 0.01 * (number + 1))
            return True

    class Engine:
        num_io_tensors = 2

        def get_tensor_name(self, index: int) -> str:
            return ["image", "output"][index]

        def get_tensor_mode(self, name: str) -> Any:
            return trt.TensorIOMode.INPUT if name == "image" else trt.TensorIOMode.OUTPUT

        def get_tensor_dtype(self, name: str) -> str:
            return "float32"

        def create_engine_inspector(self) -> Inspector:
            return Inspector()

        def create_execution_context(self) -> Context:
            return Context()

    class Runtime:
        def __init__(self, logger: ILogger) -> None:
            pass

        def deserialize_cuda_engine(self, data: bytes) -> Engine | None:
            calls.append(("Runtime.deserialize_cuda_engine", len(data)))
            return Engine() if data.startswith(b"FAKEENGINE") else None

    trt.Runtime = Runtime
    return trt


class RecordingDevice:
    """Stands in for GPU buffers (a fake: there is no GPU here). Keeps host copies by name."""

    def __init__(self) -> None:
        self.uploads: list[tuple[str, tuple[int, ...]]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self.stream_handle = 7

    def buffer(self, name: str, nbytes: int) -> int:
        self.arrays.setdefault(name, np.zeros(nbytes, np.uint8))
        return 1000 + len(name)

    def upload(self, name: str, array: np.ndarray) -> int:
        self.uploads.append((name, tuple(array.shape)))
        self.arrays[name] = np.array(array)
        return 1000 + len(self.uploads)

    def download(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        return np.zeros(shape, dtype)

    def synchronize(self) -> None:
        pass
