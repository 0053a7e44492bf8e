"""The ``export.run`` request: a PyTorch source and how to export it — what ``deploylens export``
/ ``diagnose``, the Export panel and the reproducers share."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.export.settings import (
    EXPORT,
    ExportSettings,
    parse_dynamic_axes,
)
from deploylens.core.export.settings import python_script as standalone_script
from deploylens.core.files import output_path
from deploylens.core.pytorch.source import (
    SPEC_HELP,
    InputSpec,
    ModelSource,
    add_source_options,
    grant_consent,
    parse_input,
    parse_spec,
    source_args,
    source_options,
)
from deploylens.core.request_parts import add_field_arguments, field_args, field_values
from deploylens.core.requests import Request

if TYPE_CHECKING:
    from deploylens.core.export.result import ExportResult  # noqa: F401


@dataclass
class ExportRequest(Request["ExportResult"]):
    FILES: ClassVar[dict[str, str]] = {
        "source.target": "in",
        "source.inputs_npz": "in",
        "source.weights": "in",
        "settings.output": "out",
    }

    source: ModelSource
    settings: ExportSettings = field(default_factory=ExportSettings)
    plugin_entries: dict[str, str] = field(default_factory=dict)  # filled at submission

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        source = parser.add_argument_group("the PyTorch model")
        source.add_argument("spec", help=SPEC_HELP)
        source.add_argument(
            "--input",
            action="append",
            default=[],
            metavar="NAME:SHAPE[:DTYPE]",
            help="example input NAME:SHAPE[:DTYPE[:LOW:HIGH]], e.g. x:1x3x224x224 or "
            "input_ids:1x16:int64:0:999 (repeatable; default range: floats in [-1, 1], masks "
            "0/1, integer ids within the model's vocabulary)",
        )
        source.add_argument("--inputs", help=".npz of example inputs (no pickles)")
        add_source_options(source)
        groups = {EXPORT: parser.add_argument_group(EXPORT)}
        add_field_arguments(ExportSettings, parser, groups)  # exporter, opset, out, …
        groups[EXPORT].add_argument(
            "--dynamic",
            action="append",
            default=[],
            metavar="TENSOR:AXIS:LABEL",
            help="make an axis dynamic, e.g. input_ids:1:sequence (repeatable)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExportRequest:
        source = source_options(parse_spec(args.spec), args.task, args.weights)
        source.inputs = [parse_input(text) for text in args.input]
        source.inputs_npz = args.inputs or ""
        settings = ExportSettings(
            **field_values(ExportSettings, args), dynamic_axes=parse_dynamic_axes(args.dynamic)
        )
        return cls(source, settings)

    def cli_args(self) -> list[str]:
        source, settings = self.source, self.settings
        parts = [source.spec(), *source_args(source), *field_args(settings)]
        for spec in source.inputs:
            shape = "x".join(map(str, spec.shape))
            ranged = spec.low is not None and spec.high is not None
            given = f":{spec.low:g}:{spec.high:g}" if ranged else ""
            parts += ["--input", f"{spec.name}:{shape}:{spec.dtype}{given}"]
        if source.inputs_npz:
            parts += ["--inputs", source.inputs_npz]
        for tensor, axes in settings.dynamic_axes.items():
            for axis, label in axes.items():
                parts += ["--dynamic", f"{tensor}:{axis}:{label}"]
        return parts

    def python_script(self, drawn: list[InputSpec] | None = None) -> str:
        """The same export with torch.onnx alone (no DeployLens needed to run it); ``drawn``:
        the example inputs the job used, where the source made them."""
        return standalone_script(self.source, self.settings, drawn)

    def prepared(self, trust: bool = False, output: str | None = None) -> ExportRequest:
        """Ready to send: the inputs file checked, the output made absolute (``output`` overrides
        it: diagnose exports into a scratch folder), consent recorded when given, the app's
        plugin entries attached."""
        from deploylens.core.files import input_file
        from deploylens.core.plugin_api import plugin_entries

        source = replace(self.source)
        if source.inputs_npz:
            source.inputs_npz = str(input_file(source.inputs_npz, "inputs .npz").resolve())
        if source.kind == "python" and trust:
            grant_consent(source.target)
        settings = replace(self.settings, output=output_path(output or self.settings.output))
        return replace(self, source=source, settings=settings, plugin_entries=plugin_entries())
