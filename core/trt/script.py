"""A standalone Python build script for the settings (Polygraphy's ``add_to_script`` idea): what
DeployLens would do, as plain TensorRT API calls an engineer can run and edit on a GPU box."""

from __future__ import annotations

from deploylens.core.codegen import docstring, identifier, literal
from deploylens.core.trt.checks import assert_buildable
from deploylens.core.trt.flags import RTX, family
from deploylens.core.trt.settings import (
    CURRENT_GPU,
    HARDWARE_LEVELS,
    VERBOSITY,
    BuildSettings,
    switches_on,
)


def build_script(
    settings: BuildSettings, version: str, model: str, engine: str = "model.engine"
) -> str:
    assert_buildable(settings, version, None)
    fam, s = family(version), settings
    product = "TensorRT-RTX" if fam == RTX else f"TensorRT {version}"
    lines = [
        "#!/usr/bin/env python3",
        docstring(f"Build {engine} from {model} with {product} (written by DeployLens)."),
        "import ctypes" if fam == "8.6" and s.plugins else "",
        "from pathlib import Path",
        "",
        "import tensorrt_rtx as trt" if fam == RTX else "import tensorrt as trt",
        "",
        "logger = trt.Logger(trt.Logger.INFO)",
        'trt.init_libnvinfer_plugins(logger, "")',
    ]
    for plugin in s.plugins or []:
        lines.append(
            f"ctypes.CDLL({literal(plugin)}, mode=ctypes.RTLD_GLOBAL)"
            if fam == "8.6"
            else f"trt.get_plugin_registry().load_library({literal(plugin)})"
        )
    flags = "0"
    if fam == "8.6":
        flags = "1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)"
    elif fam == "10" and s.strongly_typed:
        flags = "1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)"
    lines += [
        "builder = trt.Builder(logger)",
        f"network = builder.create_network({flags})",
        "parser = trt.OnnxParser(network, logger)",
        f"if not parser.parse_from_file({literal(model)}):",
        "    for i in range(parser.num_errors):",
        "        print(parser.get_error(i))",
        '    raise SystemExit("the ONNX parser rejected the model")',
        "config = builder.create_builder_config()",
    ]
    if fam == RTX and s.compute_capabilities:
        targets = s.compute_capabilities
        lines += [
            "# ahead of time, for these GPUs (no GPU needed to build)"
            if targets != [CURRENT_GPU]
            else "# for the GPU this runs on",
            f"config.num_compute_capabilities = {literal(len(targets))}",
            *(
                "config.set_compute_capability("
                f"trt.ComputeCapability.{identifier(t.upper(), 'target')}, {i})"
                for i, t in enumerate(targets)
            ),
        ]
    if s.workspace_mb is not None:
        lines.append(
            "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, "
            f"{literal(s.workspace_mb)} << 20)"
        )
    if s.tactic_dram_mb is not None:
        lines.append(
            "config.set_memory_pool_limit(trt.MemoryPoolType.TACTIC_SHARED_MEMORY, "
            f"{literal(s.tactic_dram_mb)} << 20)"
        )
    if s.optimization_level is not None:
        lines.append(f"config.builder_optimization_level = {literal(s.optimization_level)}")
    if fam not in ("11", RTX):
        for precision in s.precisions or []:
            if precision != "tf32":
                lines.append(
                    f"config.set_flag(trt.BuilderFlag.{identifier(precision.upper(), 'precision')})"
                )
        if s.precision_constraints in ("obey", "prefer"):
            lines.append(
                "config.set_flag(trt.BuilderFlag."
                f"{identifier(s.precision_constraints.upper(), 'precision constraint')}"
                "_PRECISION_CONSTRAINTS)"
            )
        if s.layer_precisions or s.layer_output_types:
            lines += [
                "import fnmatch",
                "TYPES = {'fp32': trt.float32, 'fp16': trt.float16, 'int8': trt.int8}",
                f"LAYER_PRECISIONS = {literal(s.layer_precisions or {})}",
                f"LAYER_OUTPUT_TYPES = {literal(s.layer_output_types or {})}",
                "for index in range(network.num_layers):",
                "    layer = network.get_layer(index)",
                "    for pattern, precision in LAYER_PRECISIONS.items():",
                "        if fnmatch.fnmatchcase(layer.name, pattern):",
                "            layer.precision = TYPES[precision]",
                "    for pattern, precision in LAYER_OUTPUT_TYPES.items():",
                "        if fnmatch.fnmatchcase(layer.name, pattern):",
                "            for output in range(layer.num_outputs):",
                "                layer.set_output_type(output, TYPES[precision])",
            ]
        if s.calibration is not None and s.calibration.cache:
            minmax = s.calibration.method == "minmax"
            calibrator = "IInt8MinMaxCalibrator" if minmax else "IInt8EntropyCalibrator2"
            lines += [
                "# INT8 scales from DeployLens' calibration cache (no data needed at build time)",
                f"class CacheCalibrator(trt.{calibrator}):",
                "    def __init__(self):",
                "        super().__init__()",
                "    def get_batch_size(self):",
                "        return 1",
                "    def get_batch(self, names):",
                "        return None",
                "    def read_calibration_cache(self):",
                f"        return Path({literal(s.calibration.cache)}).read_bytes()",
                "    def write_calibration_cache(self, cache):",
                "        pass",
                "calibrator = CacheCalibrator()",
                "config.int8_calibrator = calibrator",
            ]
    if s.no_tf32:
        lines.append("config.clear_flag(trt.BuilderFlag.TF32)")
    if s.profiles:  # a shape tensor's entry holds its values (set_shape_input)
        lines.append("shape_tensors = {network.get_input(i).name for i in range(network.num_inputs)"
                     " if network.get_input(i).is_shape_tensor}")  # fmt: skip
    for profile in s.profiles or []:
        lines.append("profile = builder.create_optimization_profile()")
        for name, (low, opt, high) in profile.shapes.items():
            lines.append(
                f"(profile.set_shape_input if {literal(name)} in shape_tensors else "
                f"profile.set_shape)({literal(name)}, {literal(tuple(low))}, "
                f"{literal(tuple(opt))}, {literal(tuple(high))})"
            )
        lines.append("config.add_optimization_profile(profile)")
    if s.timing_cache:
        lines += [
            f"cache_path = Path({literal(s.timing_cache)})",
            "timing_cache = config.create_timing_cache("
            'cache_path.read_bytes() if cache_path.is_file() else b"")',
            "config.set_timing_cache(timing_cache, False)",
        ]
    for change in s.tactic_sources or []:
        op = "|" if change.startswith("+") else "& ~"
        lines.append(
            f"config.set_tactic_sources(config.get_tactic_sources() {op} "
            f"(1 << int(trt.TacticSource.{identifier(change[1:].upper(), 'tactic source')})))"
        )
    if s.sparsity in ("enable", "force"):
        lines.append("config.set_flag(trt.BuilderFlag.SPARSE_WEIGHTS)")
    if s.dla_core is not None:
        lines += [
            "config.default_device_type = trt.DeviceType.DLA",
            f"config.DLA_core = {literal(s.dla_core)}",
        ]
        if s.gpu_fallback:
            lines.append("config.set_flag(trt.BuilderFlag.GPU_FALLBACK)")
    if s.hardware_compatibility:
        lines.append(
            "config.hardware_compatibility_level = "
            f"trt.HardwareCompatibilityLevel.{HARDWARE_LEVELS[s.hardware_compatibility]}"
        )
    if s.max_aux_streams is not None:
        lines.append(f"config.max_aux_streams = {literal(s.max_aux_streams)}")
    if s.profiling_verbosity:
        lines.append(
            "config.profiling_verbosity = "
            f"trt.ProfilingVerbosity.{VERBOSITY[s.profiling_verbosity]}"
        )
    lines += [f"config.set_flag(trt.BuilderFlag.{w.builder_flag})" for w in switches_on(s)]
    lines += [
        "engine = builder.build_serialized_network(network, config)",
        "if engine is None:",
        '    raise SystemExit("the build failed: see the log above")',
        f"Path({literal(engine)}).write_bytes(bytes(engine))",
    ]
    if s.timing_cache:
        lines.append("cache_path.write_bytes(bytes(config.get_timing_cache().serialize()))")
    lines.append(f"print('wrote', {literal(engine)})")
    return "\n".join(line for line in lines if line is not None) + "\n"
