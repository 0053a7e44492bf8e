"""TensorRT build settings, version-aware. Every field is optional and ``None`` means
"TensorRT's default" (Polygraphy's ``CreateConfig`` is the model), so a reproducer holds only
what the user changed. Checks give precise messages; outputs are the exact trtexec command for
the target version, a Polygraphy line, and TOML for the project."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from deploylens.core.errors import UserError
from deploylens.core.files import SETTINGS_LIMIT, parse_toml, read_text
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
        profiles.append(checked_profile(Profile(shapes), f"{where}: profile {number}"))
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


def default_engine(model: str) -> str:
    """Beside the model, never into the installation (``core.outputs.beside``)."""
    from deploylens.core.outputs import beside

    return beside(model, ".engine")


MAX_DIM = 2**31 - 1


def checked_profile(profile: Profile, where: str) -> Profile:
    """A profile whose every dimension TensorRT can take: 1 to 2^31 − 1 (a 0, −1, 2^31 or 2^63
    went into the trtexec line and the script, and ``--build`` raised TensorRT's own error),
    min, opt and max of one rank with min ≤ opt ≤ max. For a shape-tensor input the lists are
    its values (trtexec's meaning of ``--minShapes`` for one), held to the same bounds."""
    for name, (low, opt, high) in profile.shapes.items():
        here = f"{where}, '{name[:60]}'"
        if not len(low) == len(opt) == len(high) or not low:
            raise UserError(f"{here}: min, opt and max need the same number of dimensions.")
        for dim in (*low, *opt, *high):
            if not 1 <= dim <= MAX_DIM:
                raise UserError(
                    f"{here}: dimension {dim} is outside 1…{MAX_DIM:,} (what TensorRT takes)."
                )
        if any(not a <= b <= c for a, b, c in zip(low, opt, high, strict=True)):
            raise UserError(f"{here}: need min ≤ opt ≤ max in every dimension.")
    return profile
