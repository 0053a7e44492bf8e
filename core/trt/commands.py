"""What a TensorRT build looks like written down: the trtexec and Polygraphy lines, the engine
view's command for trtexec's reports, and the TensorRT 11 migration (calibrate → Q/DQ →
strongly typed). Every value is quoted with ``shlex`` (the settings are checked first)."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trt.checks import assert_buildable, check
from deploylens.core.trt.flags import FLAGS, RTX, family
from deploylens.core.trt.settings import (
    CURRENT_GPU,
    REMOVED_IN_11,
    BuildSettings,
    Calibration,
    default_engine,
    switches_on,
)


def _shape(dims: list[int]) -> str:
    return "x".join(str(d) for d in dims)


def engine_reports(engine: str) -> dict[str, str]:
    """The JSON files trtexec writes beside ``engine`` and ``deploylens engine`` reads."""
    stem = str(Path(engine).with_suffix(""))
    return {
        "layers": f"{stem}.layers.json",
        "profile": f"{stem}.profile.json",
        "times": f"{stem}.times.json",
    }


def engine_command(engine: str) -> str:
    """How to open what the trtexec line writes."""
    files = engine_reports(engine)
    return (
        f"deploylens engine {shlex.quote(files['layers'])} --profile "
        f"{shlex.quote(files['profile'])} --times {shlex.quote(files['times'])}"
    )


def trtexec_args(
    settings: BuildSettings, version: str, model: str, engine: str = "", reports: bool = True
) -> list[str]:
    """The exact trtexec argument list for ``version`` (only flags that release has). It always
    saves the engine (``engine`` or MODEL.engine) and, with ``reports``, writes the layer info,
    per-layer profile (in a separate run, so the timing run is not slowed by it) and times
    that ``deploylens engine`` reads."""
    assert_buildable(settings, version, None)  # never a command that silently drops settings
    fam = family(version)
    if fam == RTX:
        raise UserError(
            "TensorRT-RTX's pip wheels ship no trtexec (the SDK's tensorrt_rtx tool is a separate "
            "download from NVIDIA), so no command line is made for it.",
            "use the Python build script (deploylens build … --script build.py) or the Polygraphy "
            "line, or build here: deploylens build … --build",
        )
    engine = engine or default_engine(model)
    args = ["trtexec", f"--onnx={model}", f"--saveEngine={engine}"]
    s = settings
    for number, profile in enumerate(s.profiles or []):
        if number:
            args.append("--profile=" + str(number))  # trtexec: shapes after it go to profile N
        for index, key in enumerate(("--minShapes", "--optShapes", "--maxShapes")):
            value = ",".join(f"{n}:{_shape(v[index])}" for n, v in profile.shapes.items())
            if value:
                args.append(f"{key}={value}")
    if fam != "11":
        for precision in s.precisions or []:
            if precision != "tf32":
                args.append(f"--{precision}")
        if s.strongly_typed:
            args.append("--stronglyTyped")
        if s.precision_constraints:
            args.append(f"--precisionConstraints={s.precision_constraints}")
        if s.layer_precisions:
            args.append(
                "--layerPrecisions=" + ",".join(f"{k}:{v}" for k, v in s.layer_precisions.items())
            )
        if s.layer_output_types:
            args.append(
                "--layerOutputTypes="
                + ",".join(f"{k}:{v}" for k, v in s.layer_output_types.items())
            )
        if s.calibration is not None and s.calibration.cache:
            args.append(f"--calib={s.calibration.cache}")
    if s.no_tf32:
        args.append("--noTF32")
    pools = []
    if s.workspace_mb is not None:
        pools.append(f"workspace:{s.workspace_mb}M")
    if s.tactic_dram_mb is not None and fam != "8.6":
        pools.append(f"tacticSharedMem:{s.tactic_dram_mb}M")
    if pools:
        args.append("--memPoolSize=" + ",".join(pools))
    if s.optimization_level is not None:
        args.append(f"--builderOptimizationLevel={s.optimization_level}")
    if s.timing_cache:
        args.append(f"--timingCacheFile={s.timing_cache}")
    if s.tactic_sources:
        args.append("--tacticSources=" + ",".join(s.tactic_sources))
    if s.sparsity:
        args.append(f"--sparsity={s.sparsity}")
    if s.dla_core is not None:
        args.append(f"--useDLACore={s.dla_core}")
        if s.gpu_fallback:
            args.append("--allowGPUFallback")
    if s.hardware_compatibility:
        args.append(f"--hardwareCompatibilityLevel={s.hardware_compatibility}")
    if s.max_aux_streams is not None:
        args.append(f"--maxAuxStreams={s.max_aux_streams}")
    if s.profiling_verbosity:
        args.append(f"--profilingVerbosity={s.profiling_verbosity}")
    args += [switch.trtexec for switch in switches_on(s)]
    for plugin in s.plugins or []:
        args.append(f"--plugins={plugin}" if fam == "8.6" else f"--staticPlugins={plugin}")
    if reports:
        files = engine_reports(engine)
        args += [
            f"--exportLayerInfo={files['layers']}",
            f"--exportProfile={files['profile']}",
            f"--exportTimes={files['times']}",
            "--separateProfileRun",
        ]
    names = [a.split("=")[0] for a in args[1:]]
    missing = [n for n in names if n in FLAGS and not FLAGS[n].available(fam)]
    if missing:
        raise UserError(
            f"TensorRT {version} has no {missing[0]}: {FLAGS[missing[0]].replacement}.",
            "run `deploylens build … --migrate`",
        )
    return args


def trtexec_command(
    settings: BuildSettings, version: str, model: str, engine: str = "", reports: bool = True
) -> str:
    args = trtexec_args(settings, version, model, engine, reports)
    return " ".join(shlex.quote(a) for a in args)


def polygraphy_command(
    settings: BuildSettings, model: str, engine: str = "", version: str = ""
) -> str:
    """The equivalent ``polygraphy convert`` line (Polygraphy spells some options its own way);
    it writes the same engine file as the trtexec line. For TensorRT-RTX, Polygraphy (0.50+)
    switches module with ``POLYGRAPHY_USE_TENSORRT_RTX=1`` and takes the targets as
    ``--compute-capabilities 8.9 12.0`` (or ``--use-gpu``)."""
    s = settings
    engine = engine or default_engine(model)
    rtx = bool(version) and family(version) == RTX
    args = ["polygraphy", "convert", model, "--convert-to", "trt", "-o", engine]
    if rtx:
        assert_buildable(settings, version, None)  # precision flags have no RTX spelling
        targets = settings.compute_capabilities or []
        if targets == [CURRENT_GPU]:
            args.append("--use-gpu")
        elif targets:
            args += ["--compute-capabilities", *(_dotted(t) for t in targets)]
    for precision in s.precisions or []:
        args.append(f"--{precision}")
    if s.strongly_typed:
        args.append("--strongly-typed")
    if s.precision_constraints:
        args.append(f"--precision-constraints={s.precision_constraints}")
    for profile in s.profiles or []:
        for index, key in enumerate(("--trt-min-shapes", "--trt-opt-shapes", "--trt-max-shapes")):
            args.append(key)
            args.extend(f"{n}:{list(v[index])}".replace(" ", "") for n, v in profile.shapes.items())
    if s.workspace_mb is not None:
        args.append(f"--pool-limit=workspace:{s.workspace_mb}M")
    if s.optimization_level is not None:
        args.append(f"--builder-optimization-level={s.optimization_level}")
    if s.timing_cache:
        args.append(f"--timing-cache={s.timing_cache}")
    if s.calibration is not None and s.calibration.cache:
        args.append(f"--calibration-cache={s.calibration.cache}")
    if s.hardware_compatibility:
        args.append(f"--hardware-compatibility-level={s.hardware_compatibility}")
    args += [switch.polygraphy for switch in switches_on(s) if switch.polygraphy]
    line = " ".join(shlex.quote(a) for a in args)
    return f"POLYGRAPHY_USE_TENSORRT_RTX=1 {line}" if rtx else line


def _dotted(target: str) -> str:
    """``sm89`` → ``8.9``, ``sm120`` → ``12.0`` (Polygraphy's spelling)."""
    digits = target[2:]
    return f"{digits[:-1]}.{digits[-1]}"


@dataclass(frozen=True)
class SettingChange:
    field: str
    before: Any  # a setting's value as its TOML holds it (None: unset)
    after: Any


@dataclass
class Migration:
    """A TensorRT 10 recipe as the 11.x path: the steps, the Q/DQ (or fp16) model they make,
    the strongly typed settings and what changed in them."""

    settings: BuildSettings
    model: str
    steps: list[str]
    diff: list[SettingChange]

    def lines(self) -> list[str]:
        """The numbered steps, then the settings diff (the panel's tab and the CLI's text)."""
        return [
            *(f"{n}. {step}" for n, step in enumerate(self.steps, 1)),
            "Settings diff:",
            *(f"  {d.field}: {d.before!r} → {d.after!r}" for d in self.diff),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_dict(),
            "model": self.model,
            "steps": self.steps,
            "diff": [asdict(change) for change in self.diff],
        }


def migrate_to_11(settings: BuildSettings, model: str) -> Migration:
    """A 10-style recipe (precision flags + calibrator) turned into the 11.x path."""
    steps = []
    new = BuildSettings.from_dict(settings.to_dict())
    qdq_model = model
    precisions = set(settings.precisions or [])
    if "int8" in precisions or settings.calibration is not None:
        calibration = settings.calibration or Calibration()
        qdq_model = str(Path(model).with_suffix("")) + ".qdq.onnx"
        steps.append(
            f"calibrate {model} into a Q/DQ model ({calibration.method} over "
            f"{calibration.data or 'a calibration folder'}; ONNX Runtime static quantization, "
            f"QDQ format) → {qdq_model}"
        )
    elif precisions & {"fp16", "bf16"}:
        qdq_model = str(Path(model).with_suffix("")) + ".fp16.onnx"
        steps.append(
            "convert the model to mixed precision offline (ModelOpt AutoCast, or "
            f"onnxconverter-common's float16 conversion) → {qdq_model}"
        )
    for name in REMOVED_IN_11:
        setattr(new, name, None)
    remaining = check(new, "11", None)
    if remaining:  # never a command that drops a setting (and never an exception in the panel)
        steps.append(
            "fix what TensorRT 11 would refuse, then build strongly typed: "
            + "; ".join(str(p) for p in remaining)
        )
    else:
        steps.append("build the strongly typed network: " + trtexec_command(new, "11", qdq_model))
    before, after = settings.to_dict(), new.to_dict()
    diff = [
        SettingChange(k, before.get(k), after.get(k))
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    ]
    return Migration(new, qdq_model, steps, diff)
