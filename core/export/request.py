"""The ``export.run`` request: a PyTorch source and how to export it — what ``deploylens export``
/ ``diagnose``, the Export panel and the reproducers share."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.export.settings import (
    DYNAMO,
    TORCHSCRIPT,
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
        export = parser.add_argument_group("the export")
        export.add_argument(
            "--exporter", choices=(TORCHSCRIPT, DYNAMO), default=DYNAMO,
            help="torch.export-based dynamo (default) or the TorchScript tracer",
        )  # fmt: skip
        export.add_argument("--opset", type=int, help="ONNX opset (default: the exporter's own)")
        export.add_argument(
            "--output-name", action="append", default=[], metavar="NAME",
            help="name the outputs in order (repeatable; default: a dict output's keys)",
        )  # fmt: skip
        export.add_argument(
            "--dynamic", action="append", default=[], metavar="TENSOR:AXIS:LABEL",
            help="make an axis dynamic, e.g. input_ids:1:sequence (repeatable)",
        )  # fmt: skip
        export.add_argument(
            "--no-constant-folding", action="store_true", help="torchscript: keep constant parts"
        )
        export.add_argument("--no-optimize", action="store_true", help="dynamo: skip the optimizer")
        export.add_argument(
            "--external-data", action="store_true", help="weights in a file beside the model"
        )
        export.add_argument("--plugin", action="append", default=[], help="op plugin to apply")
        export.add_argument(
            "--out", default="model.onnx", metavar="FILE", help="the ONNX file (default model.onnx)"
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExportRequest:
        source = source_options(parse_spec(args.spec), args.task, args.weights)
        source.inputs = [parse_input(text) for text in args.input]
        source.inputs_npz = args.inputs or ""
        settings = ExportSettings(
            exporter=args.exporter,
            opset=args.opset,
            output=args.out,
            output_names=list(args.output_name),
            dynamic_axes=parse_dynamic_axes(args.dynamic),
            constant_folding=not args.no_constant_folding,
            optimize=not args.no_optimize,
            external_data=args.external_data,
            plugins=list(args.plugin),
        )
        return cls(source, settings)

    def cli_args(self) -> list[str]:
        source, settings = self.source, self.settings
        parts = [source.spec(), *source_args(source), "--exporter", settings.exporter]
        if settings.opset is not None:
            parts += ["--opset", str(settings.opset)]
        for spec in source.inputs:
            shape = "x".join(map(str, spec.shape))
            ranged = spec.low is not None and spec.high is not None
            given = f":{spec.low:g}:{spec.high:g}" if ranged else ""
            parts += ["--input", f"{spec.name}:{shape}:{spec.dtype}{given}"]
        if source.inputs_npz:
            parts += ["--inputs", source.inputs_npz]
        for name in settings.output_names:
            parts += ["--output-name", name]
        for tensor, axes in settings.dynamic_axes.items():
            for axis, label in axes.items():
                parts += ["--dynamic", f"{tensor}:{axis}:{label}"]
        if not settings.constant_folding:
            parts.append("--no-constant-folding")
        if not settings.optimize:
            parts.append("--no-optimize")
        if settings.external_data:
            parts.append("--external-data")
        for plugin in settings.plugins:
            parts += ["--plugin", plugin]
        return [*parts, "--out", settings.output]

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
