"""TensorRT build settings, version-aware. Every field is optional and ``None`` means
"TensorRT's default" (Polygraphy's ``CreateConfig`` is the model), so a reproducer holds only
what the user changed. Checks give precise messages; outputs are the exact trtexec command for
the target version, a Polygraphy line, and TOML for the project."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from deploylens.core.errors import UserError
from deploylens.core.files import SETTINGS_LIMIT, parse_toml, read_text
from deploylens.core.trt.flags import FLAGS, NEWEST_MAJOR, RTX, RTX_MAJORS, family
from deploylens.core.typed import close_match, conform, hints, kind

PRECISIONS = ("tf32", "fp16", "bf16", "int8", "fp8")
LAYER_TYPES = ("fp32", "fp16", "bf16", "int8", "fp8")  # per-layer precision / output type
# Setting value → TensorRT enum member (the adapter, the script and the checks read these).
TACTIC_SOURCES = ("CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS")
HARDWARE_LEVELS = {
    "none": "NONE",
    "ampere+": "AMPERE_PLUS",
    "sameComputeCapability": "SAME_COMPUTE_CAPABILITY",
}
VERBOSITY = {"detailed": "DETAILED", "layer_names_only": "LAYER_NAMES_ONLY", "none": "NONE"}
CALIBRATION_METHODS = ("minmax", "entropy", "percentile")
# TensorRT-RTX's ahead-of-time targets (``trt.ComputeCapability`` members, lower-cased). Hopper
# (sm90: H100/H200) is not among them; "current" means the GPU the build runs on.
COMPUTE_CAPABILITIES = ("sm75", "sm80", "sm86", "sm89", "sm120", "sm121")
CURRENT_GPU = "current"
# What TensorRT-RTX builds for when no target is named (its documentation: "CPU-only AOT").
RTX_DEFAULT_TARGETS = ("sm80", "sm86", "sm89", "sm120")
RTX_TACTIC_SOURCES = ("EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS")
REMOVED_IN_11 = (
    "precisions",
    "precision_constraints",
    "layer_precisions",
    "layer_output_types",
    "calibration",
    "strongly_typed",
)


@dataclass
class Profile:
    """One optimization profile: ``{input: (min, opt, max)}`` shapes."""

    shapes: dict[str, tuple[list[int], list[int], list[int]]] = field(default_factory=dict)


@dataclass
class Calibration:
    method: str = "entropy"
    percentile: float | None = None
    data: str = ""
    preprocess: str = ""
    batch_size: int | None = None
    batches: int | None = None
    cache: str = ""


@dataclass
class BuildSettings:
    precisions: list[str] | None = None  # ≤10: builder flags
    no_tf32: bool | None = None
    strongly_typed: bool | None = None
    precision_constraints: str | None = None  # "prefer" | "obey" (≤10)
    layer_precisions: dict[str, str] | None = None  # layer name or pattern → fp16/fp32/int8 …
    layer_output_types: dict[str, str] | None = None
    workspace_mb: int | None = None
    tactic_dram_mb: int | None = None
    optimization_level: int | None = None
    profiles: list[Profile] | None = None
    timing_cache: str | None = None
    tactic_sources: list[str] | None = None  # e.g. ["-CUDNN", "+CUBLAS"]
    sparsity: str | None = None  # "disable" | "enable" | "force"
    dla_core: int | None = None
    gpu_fallback: bool | None = None
    hardware_compatibility: str | None = None  # "none" | "ampere+" | "sameComputeCapability"
    compute_capabilities: list[str] | None = None  # TensorRT-RTX AOT targets: sm89, sm120 …
    version_compatible: bool | None = None
    max_aux_streams: int | None = None
    profiling_verbosity: str | None = "detailed"  # rich layer info unless the user says otherwise
    refit: bool | None = None
    strip_weights: bool | None = None
    calibration: Calibration | None = None
    plugins: list[str] | None = None

    # -- TOML ----------
    def to_dict(self) -> dict[str, Any]:
        """Only what was set; profiles as ``[[profiles]]`` tables of ``input = [min, opt, max]``."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name == "profiles":
                value = [{k: [list(s) for s in v] for k, v in p.shapes.items()} for p in value]
            elif f.name == "calibration":
                value = {k: v for k, v in asdict(value).items() if v not in (None, "")}
            data[f.name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings") -> BuildSettings:
        """Settings from TOML/JSON, every value checked against its field's type: a wrong type
        made broken command lines (``workspace_mb = true`` → ``--memPoolSize=workspace:TrueM``,
        ``plugins = "x"`` → one flag per character)."""
        if not isinstance(data, dict):
            raise UserError(f"{source}: the build settings must be a table, not {kind(data)}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(
                f"{source}: unknown build setting '{unknown[0]}'"
                + close_match(unknown[0], known)
                + "."
            )
        annotations = hints(cls)
        values = {
            key: conform(value, annotations[key], f"{source}: '{key}'")
            for key, value in data.items()
            if key not in ("profiles", "calibration")
        }
        negative = [k for k, v in values.items() if type(v) is int and v < 0]
        if negative:  # sizes, levels, counts and cores: none is below 0
            raise UserError(
                f"{source}: '{negative[0]}' must be 0 or more, not {values[negative[0]]}."
            )
        _check_values(values, source)
        if "profiles" in data:
            values["profiles"] = _profiles(data["profiles"], f"{source}: 'profiles'")
        if "calibration" in data:
            table = data["calibration"]
            where = f"{source}: 'calibration'"
            if not isinstance(table, dict):
                raise UserError(f"{where} must be a table, not {kind(table)}.")
            extra = sorted(set(table) - {f.name for f in fields(Calibration)})
            if extra:
                raise UserError(f"{where} has no setting '{extra[0]}'.")
            calibration_hints = hints(Calibration)
            values["calibration"] = Calibration(
                **{k: conform(v, calibration_hints[k], f"{where}.{k}") for k, v in table.items()}
            )
        return cls(**values)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())


def _check_values(values: dict[str, Any], source: str) -> None:
    """What a type check lets through but no build can mean: a zero workspace, empty or
    repeated names, a plugin entry that names no file."""
    if values.get("workspace_mb") == 0:
        raise UserError(f"{source}: 'workspace_mb' must be at least 1 (MiB), not 0.")
    for key in ("precisions", "tactic_sources", "compute_capabilities", "plugins"):
        items = values.get(key) or []
        if any(not item.strip() or "\x00" in item for item in items):
            raise UserError(f"{source}: '{key}' has an empty entry (or one with a NUL byte).")
        repeated = sorted({item for item in items if items.count(item) > 1})
        if repeated:
            raise UserError(f"{source}: '{key}' names {repeated[0]!r} more than once.")
    for key in ("layer_precisions", "layer_output_types"):
        names = list((values.get(key) or {}).keys())
        if any(not name.strip() or "\x00" in name for name in names):
            raise UserError(
                f"{source}: '{key}' has an empty layer name (or one with a NUL byte): name a "
                "layer or a pattern such as '*conv*'."
            )
        if any("," in name for name in names):
            bad = next(name for name in names if "," in name)
            raise UserError(
                f"{source}: '{key}' layer name {bad[:60]!r} holds a comma, which trtexec's "
                "--layerPrecisions cannot spell: use a pattern such as '*part*'."
            )


def _profiles(value: Any, where: str) -> list[Profile]:
    """``[[profiles]]`` tables of ``input = [min, opt, max]`` with three lists of integers."""
    if not isinstance(value, list):
        raise UserError(f"{where} must be a list of tables, not {kind(value)}.")
    profiles = []
    for number, table in enumerate(value, 1):
        if not isinstance(table, dict):
            raise UserError(f"{where}: profile {number} must be a table, not {kind(table)}.")
        shapes = {}
        for name, triple in table.items():
            here = f"{where}: profile {number}, '{name}'"
            if not (isinstance(triple, list) and len(triple) == 3):
                raise UserError(f"{here} must be [min, opt, max] shapes, not {kind(triple)}.")
            dims = [conform(shape, list[int], f"{here}") for shape in triple]
            shapes[str(name)] = (dims[0], dims[1], dims[2])
        profiles.append(Profile(shapes))
    return profiles


@dataclass(frozen=True)
class Switch:
    """A yes/no build setting that is one ``trt.BuilderFlag``, spelled per front end."""

    field: str
    trtexec: str
    builder_flag: str
    polygraphy: str | None = None  # None: Polygraphy's convert has no option for it


SWITCHES = (
    Switch(
        "version_compatible", "--versionCompatible", "VERSION_COMPATIBLE", "--version-compatible"
    ),
    Switch("refit", "--refit", "REFIT", "--refittable"),
    Switch("strip_weights", "--stripWeights", "STRIP_PLAN"),
)


def switches_on(settings: BuildSettings) -> list[Switch]:
    """The switches ``settings`` turns on, in table order (every renderer uses the same one)."""
    return [switch for switch in SWITCHES if getattr(settings, switch.field)]


def load_settings(path: str | Path) -> BuildSettings:
    path = Path(path)
    text = read_text(path, "settings file", limit=SETTINGS_LIMIT)
    data = parse_toml(text, path.name, "settings file")
    table = data.get("build", data)
    return BuildSettings.from_dict(table, path.name + (" [build]" if "build" in data else ""))


# -- checks ----------
@dataclass
class Problem:
    field: str
    message: str
    fix: str = ""  # e.g. "deploylens build --migrate" or the flag to use instead

    def __str__(self) -> str:
        """One line for the CLI report and the Build panel: "field: message — fix"."""
        return f"{self.field}: {self.message}" + (f" — {self.fix}" if self.fix else "")


def check(
    settings: BuildSettings, version: str, inputs: dict[str, list[Any]] | None = None
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
        if settings.precisions:
            problems.append(
                Problem(
                    "precisions",
                    f"TensorRT 11 has no precision flags "
                    f"({', '.join(settings.precisions)}): networks are strongly "
                    "typed, precision comes from the model.",
                    migrate,
                )
            )
        for name in ("precision_constraints", "layer_precisions", "layer_output_types"):
            if getattr(settings, name):
                problems.append(
                    Problem(
                        name,
                        f"TensorRT 11 removed {name.replace('_', ' ')}: "
                        "set types in the model instead.",
                        migrate,
                    )
                )
        if settings.calibration is not None:
            problems.append(
                Problem(
                    "calibration",
                    "TensorRT 11 removed the INT8 calibrator: calibrate offline into a Q/DQ model.",
                    migrate,
                )
            )
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
    problems.extend(_check_profiles(settings.profiles or [], inputs))
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


_RTX_TYPES = (
    "TensorRT-RTX networks are strongly typed: precision comes from the model's types and "
    "Q/DQ nodes"
)
_RTX_TYPES_FIX = (
    "calibrate into a Q/DQ model (deploylens calibrate) for INT8, or convert the model to FP16, "
    "then build it as it is"
)


def _check_rtx(settings: BuildSettings) -> list[Problem]:
    """What TensorRT-RTX lacks (its ``BuilderFlag`` has no FP16/INT8/BF16, no calibrator, no
    per-layer precision, no DLA; timing-cache calls are no-ops since 1.2) and its targets."""
    s, problems = settings, []
    if s.precisions:
        problems.append(
            Problem(
                "precisions",
                f"TensorRT-RTX has no precision flags ({', '.join(s.precisions)}): {_RTX_TYPES}.",
                _RTX_TYPES_FIX,
            )
        )
    for name in ("precision_constraints", "layer_precisions", "layer_output_types"):
        if getattr(s, name):
            problems.append(
                Problem(
                    name,
                    f"TensorRT-RTX has no {name.replace('_', ' ')}: {_RTX_TYPES}.",
                    _RTX_TYPES_FIX,
                )
            )
    if s.calibration is not None:
        problems.append(
            Problem(
                "calibration",
                "TensorRT-RTX has no INT8 calibrator: calibrate offline into a Q/DQ model.",
                _RTX_TYPES_FIX,
            )
        )
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


def _check_profiles(profiles: list[Profile], inputs: dict[str, list[Any]] | None) -> list[Problem]:
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
    settings: BuildSettings, version: str, inputs: dict[str, list[Any]] | None
) -> None:
    problems = check(settings, version, inputs)
    if problems:
        first = problems[0]
        raise UserError(first.message, first.fix)


# -- outputs ----------
def _shape(dims: list[int]) -> str:
    return "x".join(str(d) for d in dims)


def default_engine(model: str) -> str:
    return str(Path(model).with_suffix(".engine"))


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


def migrate_to_11(settings: BuildSettings, model: str) -> dict[str, Any]:
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
        {"field": k, "before": before.get(k), "after": after.get(k)}
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    ]
    return {"settings": new, "model": qdq_model, "steps": steps, "diff": diff}
