"""FakeTensorRT — a RECORDING FAKE standing in for NVIDIA's ``tensorrt`` module (8.6, 10.x and
11.x cannot be installed in this workplace: their libraries are not on the package registry, and
running an engine needs a GPU) and, configured as ``"rtx-1.7.1.116"``, for ``tensorrt_rtx`` —
which *is* installed in CI, so ``tests/core/test_tensorrt_rtx.py`` runs the same scenarios
against both and fails on any difference in the calls made or the outcome.

It models what the adapter's contract needs, per release, following the documented Python API and
what the real TensorRT-RTX does on these machines: which enums, flags and classes exist, which
attribute writes are accepted, the callbacks TensorRT makes (logger, ``IProgressMonitor``, INT8
calibrator, ``IProfiler``) and the ONNX parser's verdicts. Given a real ONNX file the parser
reads it: nodes in another domain or with no importer in the release's onnx-tensorrt table fail
the checker stage (``INVALID_NODE``, every such node listed), ops the release imports only through
TensorRT's plugin library fail at import (``UNSUPPORTED_NODE``, parsing stops), and it logs the
plugin lookups as TensorRT does. ``supports_model_v2`` partitions like onnx-tensorrt's
``doSupportsModel``. Every call lands in ``calls`` so tests assert the exact API use. Class names
are the real ones, so a recording proxy names calls alike on both. It proves the adapter speaks
the documented API; it proves nothing about TensorRT itself.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

RTX_BUILDER_FLAGS = [
    "DEBUG", "GPU_FALLBACK", "REFIT", "DISABLE_TIMING_CACHE", "EDITABLE_TIMING_CACHE", "TF32",
    "SPARSE_WEIGHTS", "SAFETY_SCOPE", "DIRECT_IO", "VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME",
    "ERROR_ON_TIMING_CACHE_MISS", "DISABLE_COMPILATION_CACHE", "STRIP_PLAN", "REFIT_IDENTICAL",
    "WEIGHT_STREAMING", "REFIT_INDIVIDUAL", "STRICT_NANS", "MONITOR_MEMORY",
    "DISTRIBUTIVE_INDEPENDENCE", "REQUIRE_USER_ALLOCATION",
]  # fmt: skip
# Ops TensorRT-RTX 1.7's parser imports only through TensorRT's plugin library, which it lacks
# (measured over the onnx backend node tests: DeformConv → "Plugin not found" at import).
RTX_PLUGIN_BACKED = {"DeformConv"}
PLUGIN_NOT_FOUND = "Plugin not found, are the plugin name, version, and namespace correct?"
DDS_OPS = {
    "NonMaxSuppression",
    "NonZero",
    "RoiAlign",
}  # onnx-tensorrt leaves them out of partitions


def _family(version: str) -> str:
    if version.startswith("rtx"):
        return "rtx"
    if version.startswith("11"):
        return "11"
    return "10" if version.startswith(("9", "10")) else "8.6"


def _read_onnx(path: str) -> Any:
    """The model at ``path``, or None when it is not a readable ONNX file (contract tests that
    only name a file)."""
    import onnx

    if not Path(path).is_file():
        return None
    try:
        return onnx.load(path, load_external_data=False)
    except Exception:
        return None


def make_fake_tensorrt(
    version: str,
    *,
    parse_ok: bool = True,
    build_ok: bool = True,
    layers: list[str] | None = None,
    steps: int = 4,
    gpu: bool | None = None,
) -> Any:
    """The fake module for ``version`` ("8.6.1", "10.16.0", "11.4.0", "rtx-1.7.1.116").

    ``gpu``: whether the machine it pretends to be has a GPU (engines deserialize, run). The
    classic releases default to yes (they only exist on GPU machines); TensorRT-RTX to no, as on
    the machines CI runs it."""
    fam = _family(version)
    rtx = fam == "rtx"
    has_gpu = (not rtx) if gpu is None else gpu
    calls: list[tuple[str, Any]] = []
    trt = SimpleNamespace(
        __version__=version[4:] if rtx else version,
        __name__="tensorrt_rtx" if rtx else "tensorrt",
        calls=calls,
    )
    layer_names = layers or ["/stem/conv/Conv + /stem/relu/Relu", "/head/fc/Gemm"]

    if rtx:
        flags = list(RTX_BUILDER_FLAGS)
    else:
        flags = ["TF32", "REFIT", "GPU_FALLBACK", "SPARSE_WEIGHTS", "VERSION_COMPATIBLE",
                 "DIRECT_IO"]  # fmt: skip
        if fam != "11":
            flags += ["FP16", "INT8", "OBEY_PRECISION_CONSTRAINTS", "PREFER_PRECISION_CONSTRAINTS"]
        if fam == "10":
            flags += ["BF16", "FP8"]
        if fam != "8.6":
            flags += ["STRIP_PLAN"]
    trt.BuilderFlag = enum.IntEnum("BuilderFlag", flags, start=0)
    creation = {"8.6": ["EXPLICIT_BATCH"], "rtx": ["STRONGLY_TYPED"]}.get(
        fam, ["EXPLICIT_BATCH", "STRONGLY_TYPED"]
    )
    trt.NetworkDefinitionCreationFlag = enum.IntEnum(
        "NetworkDefinitionCreationFlag", creation, start=0
    )
    pools = ["WORKSPACE", "DLA_MANAGED_SRAM", "DLA_LOCAL_DRAM", "DLA_GLOBAL_DRAM"]
    pools += ["TACTIC_DRAM", "TACTIC_SHARED_MEMORY"] if rtx else ["TACTIC_SHARED_MEMORY"]
    trt.MemoryPoolType = enum.IntEnum("MemoryPoolType", pools, start=0)
    tactics = (
        ["EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"]
        if rtx
        else ["CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"]
    )
    trt.TacticSource = enum.IntEnum("TacticSource", tactics, start=0)
    if rtx:
        trt.ComputeCapability = enum.IntEnum(
            "ComputeCapability",
            ["NONE", "CURRENT", "SM75", "SM80", "SM86", "SM89", "SM120", "SM121"],
            start=0,
        )
    trt.DeviceType = enum.IntEnum("DeviceType", ["GPU", "DLA"], start=0)
    trt.HardwareCompatibilityLevel = enum.IntEnum(
        "HardwareCompatibilityLevel", ["NONE", "AMPERE_PLUS", "SAME_COMPUTE_CAPABILITY"], start=0
    )
    trt.ProfilingVerbosity = enum.IntEnum(
        "ProfilingVerbosity", ["LAYER_NAMES_ONLY", "DETAILED", "NONE"], start=0
    )
    trt.LayerInformationFormat = enum.IntEnum(
        "LayerInformationFormat", ["ONELINE", "JSON"], start=0
    )
    trt.TensorIOMode = enum.IntEnum("TensorIOMode", ["NONE", "INPUT", "OUTPUT"], start=0)
    trt.ErrorCode = enum.IntEnum(
        "ErrorCode",
        ["SUCCESS", "INTERNAL_ERROR", "MEM_ALLOC_FAILED", "MODEL_DESERIALIZE_FAILED",
         "INVALID_VALUE", "INVALID_GRAPH", "INVALID_NODE", "UNSUPPORTED_GRAPH",
         "UNSUPPORTED_NODE"],
        start=0,
    )  # fmt: skip
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
    if fam in ("8.6", "10"):
        for name in ("IInt8EntropyCalibrator2", "IInt8MinMaxCalibrator"):
            trt.__dict__[name] = type(
                name, (), {"__init__": lambda self, n=name: calls.append((f"{n}.__init__", None))}
            )

    trt.init_libnvinfer_plugins = lambda logger, namespace: calls.append(
        ("init_libnvinfer_plugins", namespace)
    )

    class IPluginRegistry:
        def load_library(self, path: str) -> None:
            calls.append(("IPluginRegistry.load_library", path))

    registry = IPluginRegistry()
    trt.get_plugin_registry = lambda: registry

    class ILayer:
        def __init__(self, name: str) -> None:
            self.name, self.num_outputs = name, 1
            self.__dict__["precision"] = None

        def __setattr__(self, key: str, value: Any) -> None:
            if key == "precision":
                if fam in ("11", "rtx"):
                    raise AttributeError("'ILayer' object has no attribute 'precision'")
                calls.append(("ILayer.precision", (self.name, value)))
            object.__setattr__(self, key, value)

        def set_output_type(self, index: int, dtype: Any) -> None:
            if fam in ("11", "rtx"):
                raise AttributeError("'ILayer' object has no attribute 'set_output_type'")
            calls.append(("ILayer.set_output_type", (self.name, index, dtype)))

    class ITensor:
        def __init__(self, name: str, shape: tuple[int, ...]) -> None:
            self.name, self.shape = name, shape
            self.is_shape_tensor = False  # the fake's networks take no shape tensors

    class INetworkDefinition:
        def __init__(self, flags: int) -> None:
            self.flags = flags
            self._layers = [ILayer(n) for n in layer_names]
            self._inputs = [ITensor("image", (1, 3, 32, 32))]
            self._outputs = [ITensor("output", (1, 10))]

        def _load(self, model: Any) -> None:
            """Inputs, outputs and one layer a node, as the parser would make them."""
            graph = model.graph
            weights = {i.name for i in graph.initializer}

            def shape(value: Any) -> tuple[int, ...]:
                dims = value.type.tensor_type.shape.dim
                return tuple(d.dim_value if d.HasField("dim_value") else -1 for d in dims)

            self._inputs = [ITensor(v.name, shape(v)) for v in graph.input if v.name not in weights]
            self._outputs = [ITensor(v.name, shape(v)) for v in graph.output]
            self._layers = [ILayer(n.name or n.op_type) for n in graph.node]

        num_layers = property(lambda self: len(self._layers))
        num_inputs = property(lambda self: len(self._inputs))
        num_outputs = property(lambda self: len(self._outputs))

        def get_layer(self, index: int) -> ILayer:
            return self._layers[index]

        def get_input(self, index: int) -> ITensor:
            return self._inputs[index]

        def get_output(self, index: int) -> ITensor:
            return self._outputs[index]

    class ParserError:
        def __init__(
            self, code: str, desc: str, node: int = 1, name: str = "fancy_1", op: str = "FancyOp"
        ) -> None:
            self._code, self._desc, self._node, self._name, self._op = code, desc, node, name, op

        def code(self) -> Any:
            return trt.ErrorCode[self._code]

        def desc(self) -> str:
            return self._desc

        def node(self) -> int:
            return self._node

        def node_name(self) -> str:
            return self._name

        def node_operator(self) -> str:
            return self._op

    class OnnxParser:
        def __init__(self, network: INetworkDefinition, logger: ILogger) -> None:
            calls.append(("OnnxParser", None))
            self.network, self.logger = network, logger
            self.errors: list[ParserError] = []
            self.partitions: list[tuple[list[int], bool]] = []

        num_errors = property(lambda self: len(self.errors))
        num_subgraphs = property(lambda self: len(self.partitions))

        def get_error(self, index: int) -> ParserError:
            return self.errors[index]

        def _info(self, text: str) -> None:
            self.logger.log(ILogger.Severity.INFO, text)

        def _check(self, model: Any) -> tuple[list[ParserError], int]:
            """(errors, index of the failing import or -1), as the real parser finds them."""
            from deploylens.core.support.tensorrt_table import lookup, table_for

            table = table_for("10.1" if rtx else trt.__version__)[1]
            checker = []
            for index, node in enumerate(model.graph.node):
                domain = node.domain if node.domain not in ("", "ai.onnx") else ""
                row = lookup(table, node.op_type) if not domain else None
                if domain or row is None or row["supported"] != "Y":
                    self._info(
                        "Plugin not found with node attribute namespace: using pluginName: "
                        f"{node.op_type}, pluginVersion: 1, pluginNamespace: "
                    )
                    self._info(
                        "Searching for plugin with node domain namespace: using pluginName: "
                        f"{node.op_type}, pluginVersion: 1, pluginNamespace: {domain}"
                    )
                    checker.append(
                        ParserError(
                            "INVALID_NODE",
                            f'creator && "{PLUGIN_NOT_FOUND}"',
                            index,
                            node.name,
                            node.op_type,
                        )
                    )
            if checker:
                return checker, -1
            for index, node in enumerate(model.graph.node):
                if rtx and node.op_type in RTX_PLUGIN_BACKED:
                    self._info(
                        f"Searching for plugin: {node.op_type}, plugin_version: 1, "
                        "plugin_namespace: "
                    )
                    error = ParserError(
                        "UNSUPPORTED_NODE",
                        f"Assertion failed: creator: {PLUGIN_NOT_FOUND}",
                        index,
                        node.name,
                        node.op_type,
                    )
                    return [error], index
            return [], -1

        def parse_from_file(self, path: str) -> bool:
            calls.append(("OnnxParser.parse_from_file", path))
            model = _read_onnx(path)
            if model is None:  # a contract test naming no real file
                if not parse_ok:
                    self.errors = [
                        ParserError("UNSUPPORTED_NODE", "No importer registered for op: FancyOp")
                    ]
                return parse_ok
            self.errors, _ = self._check(model)
            if not self.errors:
                self.network._load(model)
            return not self.errors

        def supports_model_v2(self, data: bytes, path: str | None = None) -> bool:
            calls.append(("OnnxParser.supports_model_v2", len(data)))
            return self._partition(data)

        def _partition(self, data: bytes) -> bool:
            """onnx-tensorrt's ``doSupportsModel``: parse, then partition the nodes that neither
            failed, nor need data-dependent shapes, into runs; a run is marked supported only
            when the whole model is."""
            import onnx

            model = onnx.ModelProto()
            model.ParseFromString(data)
            self.errors, _ = self._check(model)
            failed = {e.node() for e in self.errors}  # 0-based node indices, as the real one
            partitions: list[tuple[list[int], bool]] = []
            fresh = True
            everything = not self.errors
            for index, node in enumerate(model.graph.node):
                if index in failed or node.op_type in DDS_OPS:
                    fresh, everything = True, False
                    continue
                if fresh:
                    partitions.append(([], False))
                    fresh = False
                partitions[-1][0].append(index)
            if everything and partitions:
                partitions[-1] = (partitions[-1][0], True)
            self.partitions = partitions
            return everything

        def get_subgraph_nodes(self, index: int) -> list[int]:
            return self.partitions[index][0]

        def is_subgraph_supported(self, index: int) -> bool:
            return self.partitions[index][1]

    if fam == "8.6":  # 8.x: the same partition, returned at once

        def supports_model(self: OnnxParser, data: bytes) -> tuple[bool, list]:
            calls.append(("OnnxParser.supports_model", len(data)))
            ok = self._partition(data)
            return ok, [(list(nodes), flag) for nodes, flag in self.partitions]

        OnnxParser.supports_model = supports_model
    if fam not in ("10", "rtx"):  # 11.x dropped supports_model_v2 (its table: supports_operator)
        del OnnxParser.supports_model_v2
    if fam == "11":

        def supports_operator(self: OnnxParser, op: str) -> bool:
            calls.append(("OnnxParser.supports_operator", op))
            return op not in {"Asinh"}  # the 11.x contract tests' op without an importer

        OnnxParser.supports_operator = supports_operator

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
    if fam in ("8.6", "10"):
        config_attrs.add("int8_calibrator")
    if rtx:
        config_attrs.add("num_compute_capabilities")

    class ITimingCache:
        def __init__(self, data: bytes) -> None:
            self.data = data or b"fake-timing-cache"

        def serialize(self) -> bytes:
            return self.data + b"+"

    class IBuilderConfig:
        def __init__(self) -> None:
            object.__setattr__(self, "values", {})
            # TensorRT-RTX enables both its sources (as Polygraphy prints); the classic fake
            # starts from CUBLAS | CUBLAS_LT | CUDNN, what the contract tests assert against
            object.__setattr__(self, "tactics", 0b11 if rtx else 0b111)
            object.__setattr__(self, "targets", {})

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

        def create_timing_cache(self, data: bytes) -> ITimingCache:
            calls.append(("IBuilderConfig.create_timing_cache", bytes(data)))
            self.values["cache"] = ITimingCache(bytes(data))
            return self.values["cache"]

        def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> None:
            calls.append(("IBuilderConfig.set_timing_cache", ignore_mismatch))

        def get_timing_cache(self) -> ITimingCache:
            return self.values["cache"]

        def get_tactic_sources(self) -> int:
            return self.tactics

        def set_tactic_sources(self, mask: int) -> None:
            calls.append(("IBuilderConfig.set_tactic_sources", mask))

        if rtx:

            def set_compute_capability(self, target: Any, index: int) -> None:
                calls.append(("IBuilderConfig.set_compute_capability", (target.name, index)))
                self.targets[index] = target.name

    class IOptimizationProfile:
        def __init__(self) -> None:
            self.shapes: dict[str, tuple] = {}

        def set_shape(self, name: str, low: Any, opt: Any, high: Any) -> None:
            self.shapes[name] = (tuple(low), tuple(opt), tuple(high))

    class Builder:
        def __init__(self, logger: ILogger) -> None:
            calls.append(("Builder", None))
            self.logger = logger

        def create_network(self, flags: int = 0) -> INetworkDefinition:
            calls.append(("Builder.create_network", flags))
            return INetworkDefinition(flags)

        def create_builder_config(self) -> IBuilderConfig:
            return IBuilderConfig()

        def create_optimization_profile(self) -> IOptimizationProfile:
            return IOptimizationProfile()

        def build_serialized_network(
            self, network: INetworkDefinition, config: IBuilderConfig
        ) -> bytes | None:
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
            if "CURRENT" in config.targets.values() and not has_gpu:
                self.logger.log(
                    ILogger.Severity.ERROR,
                    "IBuilder::buildSerializedNetwork: Error Code 1: Cuda Runtime (cudaError 35: "
                    "CUDA driver version is insufficient for CUDA runtime version)",
                )
                return None
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

    class EngineInspector:
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

    class IExecutionContext:
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

    class ICudaEngine:
        num_io_tensors = 2

        def get_tensor_name(self, index: int) -> str:
            return ["image", "output"][index]

        def get_tensor_mode(self, name: str) -> Any:
            return trt.TensorIOMode.INPUT if name == "image" else trt.TensorIOMode.OUTPUT

        def get_tensor_dtype(self, name: str) -> str:
            return "float32"

        def create_engine_inspector(self) -> EngineInspector:
            return EngineInspector()

        def create_execution_context(self) -> IExecutionContext:
            return IExecutionContext()

    class Runtime:
        def __init__(self, logger: ILogger) -> None:
            self.logger = logger

        def deserialize_cuda_engine(self, data: bytes) -> ICudaEngine | None:
            calls.append(("Runtime.deserialize_cuda_engine", len(data)))
            if not has_gpu:
                self.logger.log(
                    ILogger.Severity.ERROR,
                    "[checkMacros.cpp::catchCudaError::250] Error Code 1: Cuda Runtime (cudaError "
                    "35: CUDA driver version is insufficient for CUDA runtime version)",
                )
                return None
            return ICudaEngine() if data.startswith(b"FAKEENGINE") else None

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
