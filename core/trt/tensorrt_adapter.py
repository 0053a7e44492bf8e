"""The one place that talks to TensorRT's Python API: parse ONNX (with plugin libraries), build
with ``BuildSettings`` (progress through ``IProgressMonitor`` where the release has it, cancel),
serialize, inspect (``IEngineInspector`` JSON) and run with an ``IProfiler``.

Everything else in DeployLens works without TensorRT; this module takes the TensorRT module as
an argument, so the same code drives NVIDIA's ``tensorrt``, ``tensorrt_rtx`` (TensorRT-RTX, which
installs and builds on machines with no GPU: CI runs it for real) and a recording fake of the
releases that cannot be installed here. Release differences handled here: 8.6 needs the
EXPLICIT_BATCH network flag and loads plugin libraries with ctypes; 10.x has the STRONGLY_TYPED
flag and ``IPluginRegistry.load_library``; 11.x is always strongly typed and has no precision
flags, constraints or INT8 calibrator; TensorRT-RTX is strongly typed like 11.x and builds ahead
of time for the compute capabilities the config names.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_bytes
from deploylens.core.support.result import ParserFinding
from deploylens.core.trt.callbacks import make_logger, make_monitor
from deploylens.core.trt.findings import ParseRejected, plugin_searches
from deploylens.core.trt.flags import RTX, family
from deploylens.core.trt.loading import CLASSIC, PIP, RTX_MODULE, load_tensorrt, module_for
from deploylens.core.trt.settings import (
    CURRENT_GPU,
    HARDWARE_LEVELS,
    TACTIC_SOURCES,
    VERBOSITY,
    BuildSettings,
    switches_on,
)

__all__ = [  # the loader lives in trt/loading.py; its names are the adapter's callers' too
    "CLASSIC", "PIP", "RTX_MODULE", "BuildCancelled", "BuildReport", "TensorRTAdapter",
    "load_tensorrt", "module_for",
]  # fmt: skip

Progress = Callable[[float | None, str], None]


class BuildCancelled(Exception):
    """The user cancelled; TensorRT was asked to stop through ``step_complete`` → False."""


@dataclass
class BuildReport:
    engine_bytes: int
    seconds: float
    version: str
    log: list[tuple[str, str]] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    bindings: list[str] = field(default_factory=list)  # the network's inputs, then its outputs


class TensorRTAdapter:
    def __init__(
        self,
        trt: Any,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.trt = trt
        self.version: str = trt.__version__
        self.shape_tensor_inputs: frozenset[str] = frozenset()  # of the network being built
        rtx = str(getattr(trt, "__name__", CLASSIC)).startswith(RTX_MODULE)
        self.product = "TensorRT-RTX" if rtx else "TensorRT"
        try:
            self.family = family(f"{RTX}-{self.version}" if rtx else self.version)
        except ValueError:
            raise UserError(
                f"The installed {self.product} {self.version} is not a release this DeployLens "
                "knows (TensorRT 8.6, 10.x, 11.x; TensorRT-RTX 1.x): its API may differ, so it is "
                "not driven blindly.",
                f"install a supported {self.product} in the worker interpreter",
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
        return make_logger(self.trt, self.log)

    def _make_monitor(self) -> Any:
        return make_monitor(self.trt, self)

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
        from deploylens.core.consent import require_library_consent

        for name in libraries:
            library = str(require_library_consent(name))  # a library, and consented to
            if self.family == "8.6":
                import ctypes

                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
            else:
                trt.get_plugin_registry().load_library(library)

    def parse(self, model: str, settings: BuildSettings) -> tuple[Any, Any, Any]:
        """``(builder, network, parser)`` — the parser must outlive the network's weights. A
        model the parser rejects raises ``ParseRejected`` with every error as a finding."""
        trt = self.trt
        self.load_plugins(settings.plugins or [])
        builder = trt.Builder(self.logger)
        network = builder.create_network(self._network_flags(settings.strongly_typed))
        parser = trt.OnnxParser(network, self.logger)
        if not parser.parse_from_file(str(model)):
            findings = self.findings(parser)
            first = findings[0] if findings else None
            where = (
                f" at node '{first.node_name}' ({first.op})" if first and first.node_name else ""
            )
            text = first.message if first is not None else "no error message"
            raise ParseRejected(
                f"{self.label}'s ONNX parser rejected {Path(model).name}{where}: {text}",
                "see the op-support matrix for this op, or load a plugin library",
                findings,
            )
        return builder, network, parser

    @staticmethod
    def network_inputs(network: Any) -> dict[str, list[Any]]:
        """``{input: dims}`` as the parser made the network (fixed dims as ints, ``"dynamic"``
        for -1): the same shape ``model_inputs`` gives from the ONNX file."""
        inputs = {}
        for index in range(network.num_inputs):
            tensor = network.get_input(index)
            inputs[tensor.name] = [
                int(d) if int(d) >= 0 else "dynamic" for d in tuple(tensor.shape)
            ]
        return inputs

    @staticmethod
    def shape_tensors(network: Any) -> dict[str, int]:
        """Inputs TensorRT reads as shape tensors (an AffineGrid's ``size``): name → how many
        values each takes. Their profile gives values, not shapes (``set_shape_input``)."""
        found = {}
        for index in range(network.num_inputs):
            tensor = network.get_input(index)
            if getattr(tensor, "is_shape_tensor", False):
                dims = tuple(tensor.shape)
                found[tensor.name] = int(dims[0]) if len(dims) == 1 else 1
        return found

    @property
    def label(self) -> str:
        return f"{self.product} {self.version}"

    def _network_flags(self, strongly_typed: bool | None) -> int:
        trt = self.trt
        if self.family == "8.6":  # explicit batch had to be asked for before TensorRT 10
            return 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
        if self.family == "10" and strongly_typed:
            return 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
        return 0  # 11.x and TensorRT-RTX are strongly typed whatever the flags say

    def findings(self, parser: Any) -> list[ParserFinding]:
        """Every error the parser holds, with the plugin it searched for where it fell back to
        one (TensorRT logs the name, version and namespace it looked up)."""
        searches = plugin_searches(message for _, message in self.log)
        findings = []
        for index in range(parser.num_errors):
            error = parser.get_error(index)
            code = error.code()
            op = error.node_operator() if hasattr(error, "node_operator") else ""
            findings.append(
                ParserFinding(
                    node_name=error.node_name() if hasattr(error, "node_name") else "",
                    op=op,
                    code=str(getattr(code, "name", code)),
                    message=_clean_message(error.desc()),
                    plugin_searched=searches.get(op, []),
                    node=int(error.node()) if hasattr(error, "node") else -1,
                )
            )
        return findings

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
        if self.family == RTX:
            self._targets(config, s.compute_capabilities)
        if self.family not in ("11", RTX):
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
        values = self.shape_tensors(network)
        for profile_settings in s.profiles or []:
            profile = builder.create_optimization_profile()
            for name, (low, opt, high) in profile_settings.shapes.items():
                if name in values:  # a shape tensor: its values, as trtexec reads them
                    profile.set_shape_input(name, low, opt, high)
                else:
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

    def _targets(self, config: Any, targets: list[str] | None) -> None:
        """TensorRT-RTX's ahead-of-time targets; none named keeps its default set, and
        ``current`` (the GPU building it) needs a CUDA driver."""
        if not targets:
            return
        config.num_compute_capabilities = len(targets)
        for index, target in enumerate(targets):
            name = "CURRENT" if target == CURRENT_GPU else target.upper()
            config.set_compute_capability(getattr(self.trt.ComputeCapability, name), index)

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

    # -- the parser's verdict (support --target trt-live / trt-rtx) ------------------------------
    def probe(
        self, model_path: str, keep: Callable[[Any], None] | None = None, model: Any = None
    ) -> dict[str, Any]:
        """The installed parser's verdict on a model (Polygraphy's ``inspect capability``).

        The verdict is a real parse: the nodes it names in errors are the blocked ones. Where the
        release has ``supports_model_v2`` (or 8.x's ``supports_model``) its partition is added —
        runs of nodes that parsed, which is what the ONNX Runtime TensorRT provider would offload.
        A run's flag is only "the whole model is supported" (onnx-tensorrt marks every run
        unsupported otherwise, and leaves data-dependent-shape ops such as NonZero out of all
        runs), so it never decides which nodes are blocked: reading it so once blocked the
        parseable nodes around a custom op and missed the op itself. 11.x, which has neither,
        adds which op types have an importer (``supports_operator``). ``keep``: where the
        builder and its parsed networks go instead of being freed here (a worker that exits
        without freeing: ``JobContext.keep``). ``model``: the caller's ``onnx.ModelProto`` of
        the file, which names the nodes (else parsed again: vit_b_16's was a third of it)."""
        import onnx

        trt = self.trt
        builder = trt.Builder(self.logger)
        # TensorRT's own logger drops messages in C++; ours costs a Python call for each of the
        # ~85k a 10k-node parse logs. A model that parses needs none of them; one that fails is
        # parsed again with ours, whose log holds the plugin lookups its findings name.
        quiet = trt.Logger(trt.Logger.ERROR) if hasattr(trt, "Logger") else self.logger
        network = builder.create_network(self._network_flags(False))
        parser = trt.OnnxParser(network, quiet)
        supported = bool(parser.parse_from_file(str(model_path)))
        held = [(network, parser)]  # a parser points at its network: both live to the end
        if not supported and quiet is not self.logger:
            network = builder.create_network(self._network_flags(False))
            parser = trt.OnnxParser(network, self.logger)
            held.append((network, parser))
            supported = bool(parser.parse_from_file(str(model_path)))
        findings = self.findings(parser)
        if model is None:
            model = onnx.load(str(model_path), load_external_data=False)
        nodes = list(model.graph.node)

        def name(index: int) -> str:
            node = nodes[index]
            return node.name or f"{node.op_type}_{index}"

        blocked = sorted({f.node for f in findings if 0 <= f.node < len(nodes)})
        result: dict[str, Any] = {
            "version": self.version,
            "product": self.product,
            "supported": supported,
            "findings": [asdict(finding) for finding in findings],
            "unsupported_nodes": [name(i) for i in blocked],
            "api": "parse_from_file",
            "nodes": len(nodes),
        }
        # A parser keeps only a raw pointer to its network: the network must be held here (a
        # temporary one is freed at once, and the parser then crashes the process).
        partition_network = builder.create_network(self._network_flags(False))
        partition_parser = trt.OnnxParser(partition_network, quiet)  # its messages repeat
        # onnx-tensorrt's parse reports the partition supports_model_v2 would (both parse, then
        # reportSubgraphs; TensorRT-RTX 1.7 does): a second parse was half of the probe's cost
        kept = getattr(parser, "num_subgraphs", 0)
        if kept:
            runs = [list(parser.get_subgraph_nodes(i)) for i in range(kept)]
            result["api"] += " (its partition)"
        elif hasattr(partition_parser, "supports_model_v2"):
            partition_parser.supports_model_v2(model.SerializeToString())
            runs = [
                list(partition_parser.get_subgraph_nodes(i))
                for i in range(partition_parser.num_subgraphs)
            ]
            result["api"] += " + supports_model_v2"
        elif hasattr(partition_parser, "supports_model"):
            _, raw = partition_parser.supports_model(model.SerializeToString())
            runs = [list(indices) for indices, _ in raw]
            result["api"] += " + supports_model"
        else:
            runs = []
            ops = sorted({n.op_type for n in nodes})
            result["ops_without_importer"] = [
                op for op in ops if not partition_parser.supports_operator(op)
            ]
            result["api"] += " + supports_operator"
        covered = {index for run in runs for index in run}
        result["partitions"] = [[name(i) for i in run] for run in runs]
        result["outside_partitions"] = [
            name(i) for i in range(len(nodes)) if runs and i not in covered
        ]
        held.append((partition_network, partition_parser))
        del partition_parser, partition_network, parser, network
        if keep is not None:  # freed later (last item first, the builder last), or never
            keep((builder, held))
        else:
            held.clear()  # a (network, parser) pair frees its parser first: last item first
        return result

    def try_model(
        self, model: bytes, targets: list[str] | None = None, feeds: dict[str, Any] | None = None
    ) -> dict[str, str]:
        """One probe of the measured matrix: parse ``model`` (serialized) and, where it parses,
        build it (TensorRT-RTX: ahead of time for ``targets``; classic: on this GPU).
        ``{"state": "builds" | "parse-fails" | "build-fails", "code", "message"}`` — the
        parser's first error or the builder's last, as TensorRT said it. ``feeds``: the probe's
        input values, which give a shape-tensor input (a shape computed at run time) its
        values in an optimization profile, as a real build's profile would."""
        if "_cell_builder" not in self.__dict__:  # one builder for every probe
            self.__dict__["_cell_builder"] = self.trt.Builder(self.logger)
        builder = self.__dict__["_cell_builder"]
        network = builder.create_network(self._network_flags(False))
        parser = self.trt.OnnxParser(network, self.logger)
        first = len(self.log)
        try:
            if not parser.parse(model):
                found = self.findings(parser)
                head = found[0] if found else None
                return {
                    "state": "parse-fails",
                    "code": head.code if head else "",
                    "message": head.message if head else "no error message",
                }
            config = builder.create_builder_config()
            if self.family == RTX:
                self._targets(config, targets or ["sm89"])
            self._probe_profile(builder, network, config, feeds or {})
            plan = builder.build_serialized_network(network, config)
            if plan is None:
                errors = [m for level, m in self.log[first:] if level == "error"]
                last = _clean_message(errors[-1]) if errors else "no error logged"
                return {"state": "build-fails", "code": "", "message": last}
            return {"state": "builds", "code": "", "message": ""}
        finally:
            del parser, network
            del self.log[first:]  # thousands of probes: keep only what the caller returned

    def _shape_tensor_profiles(self, network: Any, settings: BuildSettings) -> None:
        """A shape-tensor input needs its values in a profile: without them TensorRT's own
        "no optimization profile" error was all a user saw."""
        for name, count in self.shape_tensors(network).items():
            if any(name in p.shapes for p in settings.profiles or []):
                continue
            example = "x".join(["N"] * count)
            raise UserError(
                f"{name} is a shape tensor (TensorRT reads its {count} value(s) while building): "
                "an optimization profile must give them.",
                f"--profile '{name}:{example}/{example}/{example}' with its values (min / opt / "
                "max), as trtexec's --minShapes/--optShapes/--maxShapes take a shape tensor's "
                "values; [[profiles]] in --settings alike.",
            )

    def _probe_profile(
        self, builder: Any, network: Any, config: Any, feeds: dict[str, Any]
    ) -> None:
        """A profile fixing each shape-tensor input at its fed values and each dynamic input at
        its fed shape (none when no input needs one)."""
        profile = None
        for index in range(network.num_inputs):
            tensor = network.get_input(index)
            value = feeds.get(tensor.name)
            if value is None:
                continue
            if tensor.is_shape_tensor:
                profile = profile or builder.create_optimization_profile()
                values = [int(v) for v in value.reshape(-1)]
                profile.set_shape_input(tensor.name, values, values, values)
            elif any(d < 0 for d in tensor.shape):
                profile = profile or builder.create_optimization_profile()
                shape = tuple(int(d) for d in value.shape)
                profile.set_shape(tensor.name, shape, shape, shape)
        if profile is not None:
            config.add_optimization_profile(profile)

    def operators(self, ops: list[str]) -> dict[str, bool]:
        """Op type → whether the parser has an importer for it (``supports_operator``; an op
        with one may still need a plugin at build time, and a custom op needs a plugin)."""
        builder = self.trt.Builder(self.logger)
        network = builder.create_network(self._network_flags(False))
        parser = self.trt.OnnxParser(network, self.logger)
        answer = {op: bool(parser.supports_operator(op)) for op in ops}
        del parser, network
        return answer

    # -- build, inspect, run --------------------------------------------------------------------
    def build(
        self,
        model: str,
        settings: BuildSettings,
        engine: str,
        calibrator: Any = None,
        prepare: Callable[[dict[str, list[Any]]], Any] | None = None,
    ) -> BuildReport:
        """Parse, configure and build; ``prepare(inputs)`` runs between parse and configure
        with the network's inputs (``{name: dims}``, a dynamic dim as ``"dynamic"``) — where
        the job checks profiles against the model TensorRT read — and may return a
        calibrator."""
        start = time.perf_counter()
        self._progress(0.0, f"parsing {Path(model).name} with {self.label}")
        builder, network, parser = self.parse(model, settings)
        bindings = [network.get_input(i).name for i in range(network.num_inputs)] + [
            network.get_output(i).name for i in range(network.num_outputs)
        ]
        self.shape_tensor_inputs = frozenset(self.shape_tensors(network))
        if prepare is not None:
            calibrator = prepare(self.network_inputs(network)) or calibrator
        self._shape_tensor_profiles(network, settings)
        config = self.configure(builder, network, settings, calibrator)
        self._progress(
            None,
            "building ahead of time (no GPU needed)"
            if self.family == RTX and (settings.compute_capabilities or []) != [CURRENT_GPU]
            else "building (TensorRT times tactics; this can take minutes)",
        )
        serialized = builder.build_serialized_network(network, config)
        if self.stopping():
            raise BuildCancelled()
        if serialized is None:
            errors = [m for level, m in self.log if level == "error"]
            last = errors[-1] if errors else "no error logged"
            hint = "read the build log; check the profiles and the layer precisions"
            if self.family == RTX and "cudaError 35" in last:
                hint = (
                    "'current' builds for the GPU this runs on and needs a CUDA driver: name the "
                    "targets instead (--target-cc sm89,sm120) to build ahead of time"
                )
            elif self.family == RTX and (settings.refit or settings.strip_weights):
                hint = (
                    "TensorRT-RTX 1.7 builds refittable or weight-stripped plans only where a GPU "
                    "is present (measured: ahead of time on a CPU-only machine its kernel "
                    "compiler fails, for every target); drop refit/strip_weights here, or build "
                    "on the RTX machine"
                )
            raise UserError(
                f"{self.label} could not build the engine: {_clean_message(last)}", hint
            )
        data = memoryview(serialized)  # the plan as TensorRT holds it: no 100 MB copy
        atomic_write_bytes(engine, data)
        if settings.timing_cache:
            atomic_write_bytes(settings.timing_cache, bytes(config.get_timing_cache().serialize()))
        del parser
        return BuildReport(
            data.nbytes,
            time.perf_counter() - start,
            self.version,
            list(self.log),
            list(self.phases),
            bindings,
        )

    def deserialize(self, engine: bytes) -> Any:
        runtime = self.trt.Runtime(self.logger)
        result = runtime.deserialize_cuda_engine(engine)
        if result is None:
            errors = [m for level, m in self.log if level == "error"]
            why = f" ({_clean_message(errors[-1])})" if errors else ""
            raise UserError(
                f"{self.label} cannot load this engine (built by another version or for another "
                f"GPU, or no GPU driver here?){why}."
            )
        return result

    def inspect(self, engine: Any) -> str:
        """``IEngineInspector`` JSON — the same format as trtexec ``--exportLayerInfo``."""
        inspector = engine.create_engine_inspector()
        result: str = inspector.get_engine_information(self.trt.LayerInformationFormat.JSON)
        return result

    def run(
        self, engine: Any, feeds: dict[str, Any], device: Any, iterations: int = 10
    ) -> tuple[dict[str, Any], dict[str, list[float]]]:
        """Execute with an ``IProfiler`` (``trt/engine_run.py``): outputs and per-layer ms."""
        from deploylens.core.trt.engine_run import run_engine

        return run_engine(self.trt, engine, feeds, device, iterations)


def _clean_message(text: str) -> str:
    """TensorRT's messages carry the C++ assertion (``creator && "Plugin not found…"``) or a
    file:line prefix; the user needs the sentence."""
    text = str(text).strip()
    if '&& "' in text:
        text = text.split('&& "', 1)[1].rstrip('"')
    for marker in ("Assertion failed: ", "creator: "):
        if text.startswith(marker):
            text = text[len(marker) :]
    return " ".join(text.split())
