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
from deploylens.core.request_parts import add_field_arguments, cli, field_args, field_values
from deploylens.core.requests import Request, flag
from deploylens.core.trt.settings import BuildSettings, default_engine, load_settings

if TYPE_CHECKING:
    from deploylens.core.trt.result import BuildResult  # noqa: F401

DEFAULT_VERSION = "10.16"
RTX_VERSION = "rtx"  # what --target-cc implies when no --trt-version is given
ENGINE = "the engine"  # the --help section


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
        "model",
        "engine",
        "settings_file",
        "target_cc",
        "profile",
    )

    model: str = field(metadata=cli("the ONNX model", positional=True, path=True, group=ENGINE))
    engine: str = field(  # default: MODEL.engine
        default="", metadata=cli("where the engine goes (MODEL.engine)", group=ENGINE)
    )
    settings: BuildSettings = field(default_factory=BuildSettings)
    settings_file: str = field(  # the TOML they came from (the CLI line names it)
        default="",
        metadata=cli(
            "TOML ([build] table or top level)", option="--settings", path=True, group=ENGINE
        ),
    )
    # by hand: --trt-version's default depends on --target-cc, which is comma-separated
    version: str = DEFAULT_VERSION  # the release the settings and commands are checked for
    target_cc: list[str] | None = None  # --target-cc: TensorRT-RTX targets over the file's
    profile: list[str] = field(  # --profile: as given (the CLI line)
        default_factory=list,
        metadata=cli(
            "an optimization profile's shapes for INPUT, e.g. input_ids:1x8/1x128/1x512 "
            "(repeat for each dynamic input; replaces the settings' profiles)",
            repeat=True,
            metavar="INPUT:MIN/OPT/MAX",
            group=ENGINE,
        ),
    )

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
        rest = typed.from_dict(cls, {k: v for k, v in data.items() if k != "settings"}, where)
        return replace(rest, settings=settings)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(ENGINE)
        add_field_arguments(cls, parser, {ENGINE: group})  # model, engine, settings, profile
        group.add_argument(
            "--trt-version",
            default=None,
            help=f"8.6, 10.x, 11.x or rtx (TensorRT-RTX; rtx-1.7 …) (default {DEFAULT_VERSION}, "
            "or rtx with --target-cc)",
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
        fields = field_values(cls, args)
        settings_file = fields["settings_file"]
        settings = load_settings(Path(settings_file)) if settings_file else BuildSettings()
        targets = (
            [t.strip().lower() for t in args.target_cc.split(",") if t.strip()]
            if (args.target_cc is not None)
            else None
        )
        if targets is not None:
            settings = replace(settings, compute_capabilities=targets or None)
        if fields["profile"]:
            from deploylens.core.trt.profiles import parse_profile_args

            settings = replace(settings, profiles=parse_profile_args(fields["profile"]))
        return cls(
            **fields,
            settings=settings,
            version=args.trt_version or (RTX_VERSION if targets else DEFAULT_VERSION),
            target_cc=targets,
        )

    def cli_args(self) -> list[str]:
        args = field_args(self)
        flag(
            args, "--trt-version", self.version, RTX_VERSION if self.target_cc else DEFAULT_VERSION
        )
        if self.target_cc is not None:
            args += ["--target-cc", ",".join(self.target_cc)]
        return args

    def python_script(self) -> str:
        """A standalone TensorRT build script (no DeployLens needed to run it)."""
        from deploylens.core.trt.script import build_script

        return build_script(self.settings, self.version, self.model, self.engine_path)

    def prepared(self) -> BuildRequest:
        from deploylens.core.files import input_file

        model = str(input_file(self.model, "ONNX model").resolve())
        return replace(self, model=model, engine=output_path(self.engine_path))
