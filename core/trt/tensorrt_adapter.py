"""The one place that talks to TensorRT's Python API: parse ONNX (with plugin libraries), build
with ``BuildSettings`` (progress through ``IProgressMonitor`` where the release has it, cancel),
serialize, inspect (``IEngineInspector`` JSON) and run with an ``IProfiler``.

Everything else in DeployLens works without TensorRT; this module takes the ``tensorrt`` module as
an argument so its contract can be tested with a recording fake (TensorRT cannot be installed in
CI). Release differences handled here: 8.6 needs the EXPLICIT_BATCH network flag and loads plugin
libraries with ctypes; 10.x has the STRONGLY_TYPED flag and ``IPluginRegistry.load_library``;
11.x is always strongly typed and has no precision flags, constraints or INT8 calibrator.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_bytes
from deploylens.core.trt.flags import family
from deploylens.core.trt.settings import (
    HARDWARE_LEVELS,
    TACTIC_SOURCES,
    VERBOSITY,
    BuildSettings,
    switches_on,
)

Progress = Callable[[float | None, str], None]
LOG_LEVELS = {"INTERNAL_ERROR": "error", "ERROR": "error", "WARNING": "warning", "INFO": "info"}


class BuildCancelled(Exception):
    """The user cancelled; TensorRT was asked to stop through ``step_complete`` → False."""


def load_tensorrt() -> Any:
    """Import ``tensorrt`` or say exactly what is missing and how to get it."""
    import importlib.util

    if importlib.util.find_spec("tensorrt") is None:
        from deploylens.core.worker.probe import pip_install_line

        raise UserError(
            "TensorRT's Python package 'tensorrt' is not installed in the worker interpreter, so "
            "engines cannot be built nor parsed here. Settings, the trtexec/Polygraphy commands, "
            "the build script and engine/profile import all work without it.",
            f"{pip_install_line('tensorrt')} (Linux or Windows with an NVIDIA GPU and driver), "
            "or pick a worker interpreter that has it in Preferences",
        )
    try:
        import tensorrt
    except (ImportError, OSError) as exc:
        raise UserError(
            f"The 'tensorrt' package is installed but its libraries do not load: {exc}.",
            "install the TensorRT libraries that match the package (pip install tensorrt-libs) "
            "and check the CUDA driver",
        ) from None
    return tensorrt


@dataclass
class BuildReport:
    engine_bytes: int
    seconds: float
    version: str
    log: list[tuple[str, str]] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)


class TensorRTAdapter:
    def __init__(
        self,
        trt: Any,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.trt = trt
        self.version: str = trt.__version__
        try:
            self.family = family(self.version)
        except ValueError:
            raise UserError(
                f"The installed TensorRT {self.version} is not a release this DeployLens knows "
                "(8.6, 10.x, 11.x): its API may differ, so it is not driven blindly.",
                "install a supported TensorRT in the worker interpreter",
            ) from None
        self.log: list[tuple[str, str]] = []
        self.phases: list[str] = []
        self._progress = progress or (lambda f, m: None)
        self._cancelled = cancelled or (lambda: False)
        self.logger = self._make_logger()
        self._monitor: Any = None  # kept alive as long as the builder may call it
        self._stop = False

    # -- callbacks TensorRT calls ---------------------------------------------------------------
    def _make_logger(self) -> Any:
        trt, log = self.trt, self.log
        base: Any = trt.ILogger  # TensorRT's classes are only known at run time

        class Logger(base):
            def __init__(self) -> None:
                trt.ILogger.__init__(self)

            def log(self, severity: Any, msg: str) -> None:
                name = getattr(severity, "name", str(severity)).rsplit(".", 1)[-1]
                log.append((LOG_LEVELS.get(name, "debug"), msg))

        return Logger()

    def _make_monitor(self) -> Any:
        trt, adapter = self.trt, self
        totals: dict[str, int] = {}

        monitor_base: Any = trt.IProgressMonitor

        class Monitor(monitor_base):
            def __init__(self) -> None:
                trt.IProgressMonitor.__init__(self)

            def phase_start(
                self, phase_name: str, parent_phase: str | None, num_steps: int
            ) -> None:
                totals[phase_name] = max(int(num_steps), 1)
                adapter.phases.append(phase_name)
                adapter._report(None, phase_name)

            def step_complete(self, phase_name: str, step: int) -> bool:
                total = totals.get(phase_name, 1)
                if (
                    next(iter(totals), phase_name) == phase_name
                ):  # the outermost phase drives the bar
                    adapter._report(
                        min((step + 1) / total, 1.0), f"{phase_name} {step + 1}/{total}"
                    )
                return not adapter.stopping()  # False asks TensorRT to stop the build

            def phase_finish(self, phase_name: str) -> None:
                totals.pop(phase_name, None)

        return Monitor()

    def _report(self, fraction: float | None, text: str) -> None:
        """Progress from inside TensorRT's callbacks: an exception must never cross into C++, so a
        raising callback (the worker's cancel does that) turns into a stop request."""
        try:
            self._progress(fraction, text)
        except Exception:
            self._stop = True

    def stopping(self) -> bool:
        return self._stop or self._cancelled()

    # -- parse ----------------------------------------------------------------------------------
    def load_plugins(self, libraries: list[str]) -> None:
        trt = self.trt
        trt.init_libnvinfer_plugins(self.logger, "")
        for library in libraries:
            if not Path(library).is_file():
                raise UserError(f"The plugin library {library} does not exist.")
            if self.family == "8.6":
                import ctypes

                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
            else:
                trt.get_plugin_registry().load_library(library)

    def parse(self, model: str, settings: BuildSettings) -> tuple[Any, Any, Any]:
        """``(builder, network, parser)`` — the parser must outlive the network's weights."""
        trt = self.trt
        self.load_plugins(settings.plugins or [])
        builder = trt.Builder(self.logger)
        flags = 0
        if self.family == "8.6":
            flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
        elif self.family == "10" and settings.strongly_typed:
            flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, self.logger)
        if not parser.parse_from_file(str(model)):
            errors = [parser.get_error(i) for i in range(parser.num_errors)]
            first = errors[0] if errors else None
            where = ""
            if first is not None and hasattr(first, "node_name") and first.node_name():
                where = f" at node '{first.node_name()}' ({first.node_operator()})"
            text = first.desc() if first is not None else "no error message"
            raise UserError(
                f"TensorRT {self.version}'s ONNX parser rejected {Path(model).name}{where}: {text}",
                "see the op-support matrix for this op, or load a plugin library",
            )
        return builder, network, parser

    # -- configure ------------------------------------------------------------------------------
    def configure(
        self, builder: Any, network: Any, settings: BuildSettings, calibrator: Any = None
    ) -> Any:
        trt, s = self.trt, settings
        config = builder.create_builder_config()
        if s.workspace_mb is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, s.workspace_mb << 20)
        if s.tactic_dram_mb is not None:  # trtexec's --memPoolSize=tacticSharedMem
            config.set_memory_pool_limit(
                trt.MemoryPoolType.TACTIC_SHARED_MEMORY, s.tactic_dram_mb << 20
            )
        if s.optimization_level is not None:
            config.builder_optimization_level = s.optimization_level
        if self.family != "11":
            for precision in s.precisions or []:
                if precision != "tf32":
                    config.set_flag(getattr(trt.BuilderFlag, precision.upper()))
            if s.precision_constraints in ("obey", "prefer"):
                config.set_flag(
                    getattr(
                        trt.BuilderFlag, f"{s.precision_constraints.upper()}_PRECISION_CONSTRAINTS"
                    )
                )
            self._layer_types(network, s)
            if calibrator is not None:
                config.int8_calibrator = calibrator
        if s.no_tf32:
            config.clear_flag(trt.BuilderFlag.TF32)
        for profile_settings in s.profiles or []:
            profile = builder.create_optimization_profile()
            for name, (low, opt, high) in profile_settings.shapes.items():
                profile.set_shape(name, low, opt, high)
            config.add_optimization_profile(profile)
        if s.timing_cache:
            path = Path(s.timing_cache)
            cache = config.create_timing_cache(path.read_bytes() if path.is_file() else b"")
            config.set_timing_cache(cache, False)
        if s.tactic_sources:
            config.set_tactic_sources(
                self._tactic_mask(config.get_tactic_sources(), s.tactic_sources)
            )
        if s.sparsity in ("enable", "force"):
            config.set_flag(trt.BuilderFlag.SPARSE_WEIGHTS)
        if s.dla_core is not None:
            config.default_device_type = trt.DeviceType.DLA
            config.DLA_core = s.dla_core
            if s.gpu_fallback:
                config.set_flag(trt.BuilderFlag.GPU_FALLBACK)
        if s.hardware_compatibility:
            config.hardware_compatibility_level = getattr(
                trt.HardwareCompatibilityLevel, HARDWARE_LEVELS[s.hardware_compatibility]
            )
        if s.max_aux_streams is not None:
            config.max_aux_streams = s.max_aux_streams
        if s.profiling_verbosity:
            config.profiling_verbosity = getattr(
                trt.ProfilingVerbosity, VERBOSITY[s.profiling_verbosity]
            )
        for switch in switches_on(s):
            config.set_flag(getattr(trt.BuilderFlag, switch.builder_flag))
        if hasattr(trt, "IProgressMonitor"):  # 10.0+
            self._monitor = self._make_monitor()
            config.progress_monitor = self._monitor
        return config

    def _layer_types(self, network: Any, s: BuildSettings) -> None:
        if not (s.layer_precisions or s.layer_output_types):
            return
        trt = self.trt
        types = {
            "fp32": trt.float32,
            "fp16": trt.float16,
            "bf16": getattr(trt, "bfloat16", None),
            "int8": trt.int8,
            "fp8": getattr(trt, "fp8", None),
        }
        for index in range(network.num_layers):
            layer = network.get_layer(index)
            for pattern, precision in (s.layer_precisions or {}).items():
                if fnmatch.fnmatchcase(layer.name, pattern):
                    layer.precision = types[precision]
            for pattern, precision in (s.layer_output_types or {}).items():
                if fnmatch.fnmatchcase(layer.name, pattern):
                    for output in range(layer.num_outputs):
                        layer.set_output_type(output, types[precision])

    def _tactic_mask(self, mask: int, changes: list[str]) -> int:
        for change in changes:
            sign, name = change[:1], change[1:].upper()
            if sign not in "+-" or name not in TACTIC_SOURCES:
                raise UserError(
                    f"Tactic source '{change}': use +NAME or -NAME with NAME one of "
                    f"{', '.join(TACTIC_SOURCES)}."
                )
            bit = 1 << int(getattr(self.trt.TacticSource, name))
            mask = mask | bit if sign == "+" else mask & ~bit
        return mask

    # -- the parser's verdict (support --target trt-live) -----------------------------------------
    def probe(self, model: Any) -> dict[str, Any]:
        """Which nodes of ``model`` (an ``onnx.ModelProto``) the ONNX parser accepts, by subgraph,
        with whichever query the release has: ``supports_model_v2`` (10.x), ``supports_model``
        (8.x/9.x) or ``supports_operator`` per op type (11.x)."""
        trt, version = self.trt, self.version
        builder = trt.Builder(self.logger)
        flags = 0
        if self.family == "8.6":  # explicit batch had to be asked for before TensorRT 10
            flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, self.logger)
        data = model.SerializeToString()
        nodes = list(model.graph.node)
        if hasattr(parser, "supports_model_v2"):
            supported = bool(parser.supports_model_v2(data))
            subgraphs = [
                (list(parser.get_subgraph_nodes(i)), bool(parser.is_subgraph_supported(i)))
                for i in range(parser.num_subgraphs)
            ]
            api = "supports_model_v2"
        elif hasattr(parser, "supports_model"):
            supported, raw = parser.supports_model(data)
            subgraphs = [(list(indices), bool(ok)) for indices, ok in raw]
            api = "supports_model"
        else:
            verdicts = {op: bool(parser.supports_operator(op)) for op in {n.op_type for n in nodes}}
            subgraphs = [([i], verdicts[n.op_type]) for i, n in enumerate(nodes)]
            supported = all(verdicts.values())
            api = "supports_operator"
        unsupported = sorted({i for indices, ok in subgraphs if not ok for i in indices})
        return {
            "version": version,
            "api": api,
            "supported": bool(supported),
            "subgraphs": [{"nodes": indices, "supported": ok} for indices, ok in subgraphs],
            "unsupported_nodes": [
                nodes[i].name or f"{nodes[i].op_type}_{i}" for i in unsupported if i < len(nodes)
            ],
        }

    # -- build, inspect, run --------------------------------------------------------------------
    def build(
        self, model: str, settings: BuildSettings, engine: str, calibrator: Any = None
    ) -> BuildReport:
        start = time.perf_counter()
        self._progress(0.0, f"parsing {Path(model).name} with TensorRT {self.version}")
        builder, network, parser = self.parse(model, settings)
        config = self.configure(builder, network, settings, calibrator)
        self._progress(None, "building (TensorRT times tactics; this can take minutes)")
        serialized = builder.build_serialized_network(network, config)
        if self.stopping():
            raise BuildCancelled()
        if serialized is None:
            errors = [m for level, m in self.log if level == "error"]
            raise UserError(
                "TensorRT could not build the engine: "
                + (errors[-1] if errors else "no error logged"),
                "read the build log; check the profiles and the layer precisions",
            )
        data = bytes(serialized)
        atomic_write_bytes(engine, data)
        if settings.timing_cache:
            atomic_write_bytes(settings.timing_cache, bytes(config.get_timing_cache().serialize()))
        del parser
        return BuildReport(
            len(data), time.perf_counter() - start, self.version, list(self.log), list(self.phases)
        )

    def deserialize(self, engine: bytes) -> Any:
        runtime = self.trt.Runtime(self.logger)
        result = runtime.deserialize_cuda_engine(engine)
        if result is None:
            raise UserError(
                f"TensorRT {self.version} cannot load this engine (built by another "
                "version or for another GPU?)."
            )
        return result

    def inspect(self, engine: Any) -> str:
        """``IEngineInspector`` JSON — the same format as trtexec ``--exportLayerInfo``."""
        inspector = engine.create_engine_inspector()
        return inspector.get_engine_information(self.trt.LayerInformationFormat.JSON)

    def make_profiler(self) -> tuple[Any, dict[str, list[float]]]:
        trt = self.trt
        times: dict[str, list[float]] = {}

        profiler_base: Any = trt.IProfiler

        class Profiler(profiler_base):
            def __init__(self) -> None:
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name: str, ms: float) -> None:
                times.setdefault(layer_name, []).append(float(ms))

        return Profiler(), times

    def run(
        self, engine: Any, feeds: dict[str, Any], device: Any, iterations: int = 10
    ) -> tuple[dict[str, Any], dict[str, list[float]]]:
        """Execute ``iterations`` times with an ``IProfiler``; outputs of the last run and the
        per-layer times (ms) TensorRT reported."""
        import numpy as np

        trt = self.trt
        context = engine.create_execution_context()
        profiler, times = self.make_profiler()
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
