"""The ``build.engine`` request: a model, where its engine goes, the build settings and the
TensorRT release they are checked for — what ``deploylens build`` and the Build panel fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.files import output_path
from deploylens.core.requests import Request, flag
from deploylens.core.trt.settings import BuildSettings, default_engine, load_settings

if TYPE_CHECKING:
    from deploylens.core.trt.result import BuildResult  # noqa: F401

DEFAULT_VERSION = "10.16"
RTX_VERSION = "rtx"  # what --target-cc implies when no --trt-version is given


@dataclass
class BuildRequest(Request["BuildResult"]):
    FILES: ClassVar[dict[str, str]] = {
        "model": "in",
        "engine": "out",
        "settings.timing_cache": "inout",
        "settings.calibration.data": "in",
        "settings.calibration.cache": "inout",
    }

    # a project keeps the settings and the release; the model is its own, the rest the CLI's
    PROJECT_LEAVES_OUT: ClassVar[tuple[str, ...]] = (
        "model", "engine", "settings_file", "target_cc", "profile"
    )  # fmt: skip

    model: str
    engine: str = ""  # default: MODEL.engine
    settings: BuildSettings = field(default_factory=BuildSettings)
    settings_file: str = ""  # the TOML they came from (the CLI line names it)
    version: str = DEFAULT_VERSION  # the release the settings and commands are checked for
    target_cc: list[str] | None = None  # --target-cc: TensorRT-RTX targets over the file's
    profile: list[str] = field(default_factory=list)  # --profile: as given (the CLI line)

    @property
    def engine_path(self) -> str:
        return self.engine or default_engine(self.model)

    # Settings travel in their TOML layout ([[profiles]] input = [min, opt, max]).
    def to_params(self) -> dict[str, Any]:
        params = typed.to_dict(self)
        params["settings"] = self.settings.to_dict()
        result: dict[str, Any] = params
        return result

    @classmethod
    def from_fields(cls, data: Any, where: str) -> BuildRequest:
        if not isinstance(data, dict):
            raise UserError(f"{where} must be a table, not {typed.kind(data)}.")
        settings = BuildSettings.from_dict(data.get("settings") or {}, f"{where}.settings")
        rest = typed.from_dict(_Fields, {k: v for k, v in data.items() if k != "settings"}, where)
        return cls(settings=settings, **typed.to_dict(rest))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("the engine")
        group.add_argument("model", type=Path)
        group.add_argument("--settings", type=Path, help="TOML ([build] table or top level)")
        group.add_argument(
            "--trt-version",
            default=None,
            help=f"8.6, 10.x, 11.x or rtx (TensorRT-RTX; rtx-1.7 …) (default {DEFAULT_VERSION}, "
            "or rtx with --target-cc)",
        )
        group.add_argument("--engine", default="", help="where the engine goes (MODEL.engine)")
        group.add_argument(
            "--profile",
            action="append",
            default=[],
            metavar="INPUT:MIN/OPT/MAX",
            help="an optimization profile's shapes for INPUT, e.g. input_ids:1x8/1x128/1x512 "
            "(repeat for each dynamic input; replaces the settings' profiles)",
        )
        group.add_argument(
            "--target-cc",
            default=None,
            metavar="SM[,SM…]",
            help="TensorRT-RTX: build ahead of time for these compute capabilities (sm75, sm80, "
            "sm86, sm89, sm120, sm121; no GPU needed) or 'current'; implies --trt-version rtx",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BuildRequest:
        settings = load_settings(args.settings) if args.settings else BuildSettings()
        targets = (
            [t.strip().lower() for t in args.target_cc.split(",") if t.strip()]
            if (args.target_cc is not None)
            else None
        )
        if targets is not None:
            settings = replace(settings, compute_capabilities=targets or None)
        if args.profile:
            from deploylens.core.trt.profiles import parse_profile_args

            settings = replace(settings, profiles=parse_profile_args(args.profile))
        return cls(
            model=str(args.model),
            engine=args.engine,
            settings=settings,
            settings_file=str(args.settings) if args.settings else "",
            version=args.trt_version or (RTX_VERSION if targets else DEFAULT_VERSION),
            target_cc=targets,
            profile=list(args.profile),
        )

    def cli_args(self) -> list[str]:
        args = [self.model]
        flag(args, "--settings", self.settings_file, "")
        flag(
            args, "--trt-version", self.version, RTX_VERSION if self.target_cc else DEFAULT_VERSION
        )
        flag(args, "--engine", self.engine, "")
        if self.target_cc is not None:
            args += ["--target-cc", ",".join(self.target_cc)]
        for item in self.profile:
            args += ["--profile", item]
        return args

    def python_script(self) -> str:
        """A standalone TensorRT build script (no DeployLens needed to run it)."""
        from deploylens.core.trt.script import build_script

        return build_script(self.settings, self.version, self.model, self.engine_path)

    def prepared(self) -> BuildRequest:
        from deploylens.core.files import input_file

        model = str(input_file(self.model, "ONNX model").resolve())
        return replace(self, model=model, engine=output_path(self.engine_path))


@dataclass
class _Fields:
    """The request's fields other than the settings, for the strict conversion."""

    model: str
    engine: str = ""
    settings_file: str = ""
    version: str = DEFAULT_VERSION
    target_cc: list[str] | None = None
    profile: list[str] = field(default_factory=list)
