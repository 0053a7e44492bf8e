"""Build settings checked against a TensorRT release and the model: what a release lacks, what
TensorRT-RTX refuses (precision flags, calibrators), profiles against the model's inputs, words
that are not TensorRT's, plugin libraries. Every problem is a sentence naming its field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trt.flags import FLAGS, NEWEST_MAJOR, RTX, RTX_MAJORS, family
from deploylens.core.trt.settings import (
    CALIBRATION_METHODS,
    COMPUTE_CAPABILITIES,
    CURRENT_GPU,
    HARDWARE_LEVELS,
    LAYER_TYPES,
    PRECISIONS,
    RTX_DEFAULT_TARGETS,
    RTX_TACTIC_SOURCES,
    TACTIC_SOURCES,
    VERBOSITY,
    BuildSettings,
    Calibration,
    Profile,
)


@dataclass
class Problem:
    field: str
    message: str
    fix: str = ""  # e.g. "deploylens build --migrate" or the flag to use instead

    def __str__(self) -> str:
        """One line for the CLI report and the Build panel: "field: message — fix"."""
        return f"{self.field}: {self.message}" + (f" — {self.fix}" if self.fix else "")


def check(
    settings: BuildSettings,
    version: str,
    inputs: dict[str, list[Any]] | None = None,
    shape_tensors: frozenset[str] = frozenset(),
) -> list[Problem]:
    """Everything TensorRT ``version`` would refuse, said before a 20-minute build starts.

    ``inputs``: the model's inputs, ``{name: dims}`` with ints for fixed dims.
    """
    try:
        fam = family(version)
    except ValueError:
        return [Problem("version", version_problem(version))]
    problems: list[Problem] = []
    migrate = "run `deploylens build … --migrate` for the 11.x recipe (calibrate → QDQ model)"
    if fam != RTX and settings.compute_capabilities:
        problems.append(
            Problem(
                "compute_capabilities",
                f"TensorRT {version} builds for the GPU it runs on; only TensorRT-RTX builds "
                "ahead of time for named compute capabilities.",
                "drop them (hardware_compatibility = 'ampere+' makes an engine portable across "
                "Ampere and newer), or target TensorRT-RTX (--trt-version rtx)",
            )
        )
    if fam == RTX:
        problems.extend(_check_rtx(settings))
    elif fam == "11":
        problems.extend(_strongly_typed(settings, "TensorRT 11", migrate))
    else:
        precisions = settings.precisions or []
        unknown = [p for p in precisions if p not in PRECISIONS]
        if unknown:
            problems.append(
                Problem(
                    "precisions", f"Unknown precision '{unknown[0]}'; use {', '.join(PRECISIONS)}."
                )
            )
        for flag, name in (("--bf16", "bf16"), ("--fp8", "fp8")):
            if name in precisions and not FLAGS[flag].available(fam):
                problems.append(Problem("precisions", f"{name} needs TensorRT 9.0 or newer."))
        if settings.strongly_typed and precisions:
            problems.append(
                Problem(
                    "precisions",
                    "A strongly typed network ignores precision "
                    "flags: drop them or the strongly typed option.",
                )
            )
        if settings.strongly_typed and fam == "8.6":
            problems.append(
                Problem("strongly_typed", "Strongly typed networks need TensorRT 9.0+.")
            )
        if "int8" in precisions and settings.calibration is None:
            problems.append(
                Problem(
                    "calibration",
                    "INT8 needs calibration data (a folder and a "
                    "method) or a model with Q/DQ nodes.",
                    "add a [calibration] table, or calibrate into a QDQ model",
                )
            )
        if settings.precision_constraints not in (None, "prefer", "obey", "none"):
            problems.append(Problem("precision_constraints", "Use prefer, obey or none."))
    if settings.strip_weights and fam == "8.6":
        problems.append(Problem("strip_weights", "Weight stripping needs TensorRT 10.0 or newer."))
    if settings.optimization_level is not None and not 0 <= settings.optimization_level <= 5:
        problems.append(Problem("optimization_level", "The builder optimization level is 0 to 5."))
    if settings.calibration is not None:
        problems.extend(_check_calibration(settings.calibration))
    problems.extend(_check_profiles(settings.profiles or [], inputs, shape_tensors))
    if settings.dla_core is not None:
        if settings.dla_core < 0:
            problems.append(Problem("dla_core", "The DLA core is 0 or higher."))
        if fam not in ("11", RTX) and not {"fp16", "int8"} & set(settings.precisions or []):
            problems.append(Problem("dla_core", "DLA runs FP16 or INT8 only: add fp16 or int8."))
        if settings.profiles and len(settings.profiles) > 1:
            problems.append(Problem("profiles", "DLA engines support one profile only."))
    if settings.sparsity not in (None, "disable", "enable", "force"):
        problems.append(Problem("sparsity", "Use disable, enable or force."))
    problems.extend(_check_words(settings))
    problems.extend(_check_plugins(settings.plugins or []))
    return problems


def valid_sentence(settings: BuildSettings, version: str) -> str:
    """What a clean check means, said so that a ticked box never reads as more than it does: a
    strongly typed release (TensorRT 11, TensorRT-RTX) takes each layer's precision from the
    model, and its only precision switch is TF32 math for FP32 layers."""
    from deploylens.core.trt.flags import release_name

    name = release_name(version)
    if family(version) not in (RTX, "11"):
        return f"Settings are valid for {name}."
    tf32 = (
        "TF32 off: FP32 layers run in strict FP32"
        if settings.no_tf32
        else "FP32 layers may use TF32 math (untick TF32 for strict FP32)"
    )
    return (
        f"Settings are valid for {name}, which is strongly typed: each layer runs in its type in "
        f"the model (FP16 or Q/DQ come from the model, not from a flag); {tf32}."
    )


def _check_plugins(plugins: list[str]) -> list[Problem]:
    """An empty entry, or a file here that is not a shared library (a library that is only on
    the GPU machine may be missing here: the trtexec line is for that machine)."""
    from deploylens.core.consent import check_library

    problems = []
    for plugin in plugins:
        if plugin.strip() and not Path(plugin).exists():
            continue
        try:
            check_library(plugin)
        except UserError as exc:
            problems.append(Problem("plugins", exc.message))
    return problems


_TYPED = "networks are strongly typed: precision comes from the model's types and Q/DQ nodes"
_RTX_TYPES_FIX = (
    "calibrate into a Q/DQ model (deploylens calibrate) for INT8, or convert the model to FP16, "
    "then build it as it is"
)


def _strongly_typed(s: BuildSettings, product: str, fix: str) -> list[Problem]:
    """The settings a strongly typed builder (TensorRT 11, TensorRT-RTX) has no place for:
    precision flags, per-layer precisions and output types, the INT8 calibrator."""
    problems = []
    if s.precisions:
        problems.append(
            Problem(
                "precisions",
                f"{product} has no precision flags ({', '.join(s.precisions)}): {_TYPED}.",
                fix,
            )
        )
    for name in ("precision_constraints", "layer_precisions", "layer_output_types"):
        if getattr(s, name):
            problems.append(
                Problem(name, f"{product} has no {name.replace('_', ' ')}: {_TYPED}.", fix)
            )
    if s.calibration is not None:
        problems.append(
            Problem(
                "calibration",
                f"{product} has no INT8 calibrator: calibrate offline into a Q/DQ model.",
                fix,
            )
        )
    return problems


def _check_rtx(settings: BuildSettings) -> list[Problem]:
    """What TensorRT-RTX lacks (its ``BuilderFlag`` has no FP16/INT8/BF16, no calibrator, no
    per-layer precision, no DLA; timing-cache calls are no-ops since 1.2) and its targets."""
    s = settings
    problems = _strongly_typed(s, "TensorRT-RTX", _RTX_TYPES_FIX)
    if s.timing_cache:
        problems.append(
            Problem(
                "timing_cache",
                "TensorRT-RTX has no timing cache (its timing-cache calls are no-ops since 1.2): "
                "kernels are chosen just in time on the user's GPU.",
                "drop it; on the GPU, TensorRT-RTX's runtime cache keeps the JIT results",
            )
        )
    if s.dla_core is not None or s.gpu_fallback:
        problems.append(
            Problem(
                "dla_core", "TensorRT-RTX targets RTX GPUs: there is no DLA.", "drop the DLA core"
            )
        )
    for change in s.tactic_sources or []:
        if change[1:] in TACTIC_SOURCES and change[1:] not in RTX_TACTIC_SOURCES:
            problems.append(
                Problem(
                    "tactic_sources",
                    f"TensorRT-RTX has no {change[1:]} tactics "
                    f"(it has {', '.join(RTX_TACTIC_SOURCES)}).",
                )
            )
    targets = s.compute_capabilities or []
    for target in targets:
        if target == "sm90":
            problems.append(
                Problem(
                    "compute_capabilities",
                    "TensorRT-RTX has no Hopper target (sm90: H100/H200); it builds for RTX-class "
                    f"GPUs ({', '.join(COMPUTE_CAPABILITIES)}).",
                    "use classic TensorRT 10.x/11.x for Hopper",
                )
            )
        elif target not in (*COMPUTE_CAPABILITIES, CURRENT_GPU):
            problems.append(
                Problem(
                    "compute_capabilities",
                    f"'{target[:20]}' is not a TensorRT-RTX target: use "
                    f"{', '.join(COMPUTE_CAPABILITIES)} or {CURRENT_GPU} (the GPU building it).",
                )
            )
    if CURRENT_GPU in targets and len(targets) > 1:
        problems.append(
            Problem(
                "compute_capabilities",
                f"'{CURRENT_GPU}' must be the only target (TensorRT-RTX refuses it beside others).",
            )
        )
    if len(set(targets)) != len(targets):
        problems.append(Problem("compute_capabilities", "A target is named twice."))
    return problems


def build_targets(settings: BuildSettings) -> list[str]:
    """The compute capabilities a TensorRT-RTX build makes code for: the named ones, else its
    default set."""
    return list(settings.compute_capabilities or RTX_DEFAULT_TARGETS)


def _check_words(settings: BuildSettings) -> list[Problem]:
    """Settings spelled as words must be words TensorRT knows: an unknown one made a script
    that raised KeyError and a trtexec line that trtexec refuses."""
    problems = []
    for name, allowed in (
        ("profiling_verbosity", tuple(VERBOSITY)),
        ("hardware_compatibility", tuple(HARDWARE_LEVELS)),
    ):
        value = getattr(settings, name)
        if value is not None and value not in allowed:
            problems.append(Problem(name, f"'{value[:40]}' is not one of {', '.join(allowed)}."))
    for change in settings.tactic_sources or []:
        if change[:1] not in ("+", "-") or change[1:] not in TACTIC_SOURCES:
            problems.append(
                Problem(
                    "tactic_sources",
                    f"'{change[:40]}' is not +NAME or -NAME "
                    f"with NAME one of {', '.join(TACTIC_SOURCES)}.",
                )
            )
    for name in ("layer_precisions", "layer_output_types"):
        for layer, value in (getattr(settings, name) or {}).items():
            if value not in LAYER_TYPES:
                problems.append(
                    Problem(
                        name,
                        f"layer '{layer[:40]}': '{value[:20]}' is not one "
                        f"of {', '.join(LAYER_TYPES)}.",
                    )
                )
    return problems


def _check_calibration(calibration: Calibration) -> list[Problem]:
    problems = []
    if calibration.method not in CALIBRATION_METHODS:
        problems.append(
            Problem(
                "calibration",
                f"Unknown calibration method "
                f"'{calibration.method}'; use {', '.join(CALIBRATION_METHODS)}.",
            )
        )
    if calibration.method == "percentile" and not (
        calibration.percentile and 50.0 <= calibration.percentile <= 100.0
    ):
        problems.append(
            Problem(
                "calibration",
                "Percentile calibration needs a percentile between 50 and 100 (e.g. 99.99).",
            )
        )
    if not calibration.data and not calibration.cache:
        problems.append(Problem("calibration", "Give a calibration data folder or a cache file."))
    return problems


def _check_profiles(
    profiles: list[Profile],
    inputs: dict[str, list[Any]] | None,
    shape_tensors: frozenset[str] = frozenset(),
) -> list[Problem]:
    """Profiles against the model's inputs; a shape tensor's entry (``shape_tensors``) holds
    its values, one per element of its 1-D input."""
    problems = []
    dynamic = {
        n
        for n, dims in (inputs or {}).items()
        if any(not isinstance(d, int) or d < 0 for d in dims)
    }
    for number, profile in enumerate(profiles, 1):
        where = f"profile {number}"
        for name, (low, opt, high) in profile.shapes.items():
            if not len(low) == len(opt) == len(high):
                problems.append(
                    Problem("profiles", f"{where}, {name}: min, opt and max have different ranks.")
                )
                continue
            if any(not a <= b <= c for a, b, c in zip(low, opt, high, strict=True)):
                problems.append(
                    Problem(
                        "profiles",
                        f"{where}, {name}: need min ≤ opt ≤ max in "
                        f"every dimension ({low} / {opt} / {high}).",
                    )
                )
            if inputs is None:
                continue
            if name not in inputs:
                problems.append(
                    Problem(
                        "profiles",
                        f"{where}: the model has no input '{name}' (it has {', '.join(inputs)}).",
                    )
                )
                continue
            dims = inputs[name]
            if len(dims) == 1 and dims[0] == len(low) and name in shape_tensors:
                continue  # a shape tensor's profile holds its values
            if len(dims) != len(low):
                problems.append(
                    Problem(
                        "profiles",
                        f"{where}, {name}: the input has rank {len(dims)}, the profile {len(low)}.",
                    )
                )
                continue
            for axis, (dim, a, c) in enumerate(zip(dims, low, high, strict=True)):
                if isinstance(dim, int) and dim >= 0 and (a != dim or c != dim):
                    problems.append(
                        Problem(
                            "profiles",
                            f"{where}, {name}: axis {axis} is fixed "
                            f"at {dim} in the model and cannot take a range "
                            f"({a}…{c}).",
                        )
                    )
        if inputs is not None:
            for name in sorted(dynamic - set(profile.shapes)):
                problems.append(
                    Problem("profiles", f"{where}: dynamic input '{name}' has no shapes.")
                )
    return problems


def version_problem(version: str) -> str:
    """Why ``version`` is not a release these settings know."""
    if version.strip().lower().startswith(RTX):
        known = ", ".join(f"{m}.x" for m in RTX_MAJORS)
        return (
            f"'{version}' is not a TensorRT-RTX release this DeployLens knows (rtx, or rtx-{known}"
            " such as rtx-1.7)."
        )
    head = version.strip().split(".")[0]
    if head.isdigit() and int(head) > NEWEST_MAJOR:
        return (
            f"TensorRT {version} is newer than this DeployLens knows (8.6, 10.x, 11.x): its "
            "trtexec flags are unknown, so no command is made for it."
        )
    return f"TensorRT {version} is not supported: use 8.6, 10.x, 11.x or rtx (TensorRT-RTX)."


def assert_buildable(
    settings: BuildSettings,
    version: str,
    inputs: dict[str, list[Any]] | None,
    shape_tensors: frozenset[str] = frozenset(),
) -> None:
    problems = check(settings, version, inputs, shape_tensors)
    if problems:
        first = problems[0]
        raise UserError(first.message, first.fix)
