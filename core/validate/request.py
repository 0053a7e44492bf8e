"""The ``validate.outputs`` request: what the CLI's ``deploylens validate``, the Validate panel
and a generated script all fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from deploylens.core.pytorch.source import (
    SPEC_HELP,
    ModelSource,
    add_source_options,
    grant_consent,
    parse_spec,
    source_args,
    source_options,
)
from deploylens.core.request_parts import add_field_arguments, cli, field_args, field_values
from deploylens.core.requests import Request, flag
from deploylens.core.validate.tolerances import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    STATISTICS,
    Tolerances,
    parse_tolerance,
    tolerance_args,
)

if TYPE_CHECKING:
    from deploylens.core.validate.result import ValidationResult  # noqa: F401

DEFAULT_BUDGET_MB = 256.0
COMPARE, LAYERS = "what to compare", "layer-wise"  # the --help sections
INPUTS_HELP = (
    ".npz of inputs by input name (fed to both sides), or a folder of images/.npy/.npz "
    "(default: the PyTorch source's own example where it fits the model, else seeded random "
    "inputs shaped from the ONNX file: floats in [-1, 1], masks 1, ids within the vocabulary "
    "the model's embedding holds)"
)
PREPROCESS_HELP = (
    "for image folders: imagenet, or resize=256,crop=224,mean=a/b/c,std=a/b/c,scale=1/255,"
    "layout=NCHW,order=RGB"
)


def _torch_source(args: argparse.Namespace) -> ModelSource | None:
    """``--torch SPEC`` with its ``--task``/``--weights``; those alone are an error."""
    if args.torch:
        return source_options(parse_spec(args.torch), args.task, args.weights)
    if getattr(args, "task", "") or getattr(args, "weights", ""):
        from deploylens.core.errors import UserError

        raise UserError("--task and --weights describe the PyTorch source: give --torch too.")
    return None


@dataclass
class ValidateRequest(Request["ValidationResult"]):
    FILES: ClassVar[dict[str, str]] = {
        "path": "in",
        "inputs": "in",
        "torch.target": "in",
        "torch.inputs_npz": "in",
        "torch.weights": "in",
    }
    PROJECT_LEAVES_OUT: ClassVar[tuple[str, ...]] = ("path", "plugin_entries")

    path: str = field(
        default="",
        metadata=cli("the ONNX model", option="model", positional=True, path=True, group=COMPARE),
    )
    torch: ModelSource | None = None  # the reference; None: ORT with optimizations off
    inputs: str = field(  # an .npz/.npy, or a folder of images/arrays; "": seeded random
        default="", metadata=cli(INPUTS_HELP, path=True, group=COMPARE)
    )
    preprocess: str = field(default="", metadata=cli(PREPROCESS_HELP, group=COMPARE))
    tolerances: Tolerances = field(default_factory=Tolerances)  # by hand: N or OUTPUT:N
    seed: int = field(default=0, metadata=cli("for random inputs", type=int, group=COMPARE))
    layerwise: bool = field(
        default=False, metadata=cli("compare every mapped intermediate tensor", group=LAYERS)
    )
    budget_mb: float = field(
        default=DEFAULT_BUDGET_MB,
        metadata=cli(
            f"activations held at once in layer-wise mode (default {DEFAULT_BUDGET_MB:g})",
            type=float,
            group=LAYERS,
        ),
    )
    plugin_entries: dict[str, str] = field(default_factory=dict)  # filled at submission

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        groups = {name: parser.add_argument_group(name) for name in (COMPARE, "tolerances")}
        add_field_arguments(cls, parser, groups)  # model, inputs, seed …; layer-wise
        compare = groups[COMPARE]
        compare.add_argument(
            "--torch",
            help=f"the PyTorch source: {SPEC_HELP} (default: ONNX Runtime with graph "
            "optimizations off)",
        )
        add_source_options(compare)
        tolerances = groups["tolerances"]
        tolerances.add_argument(
            "--rtol", action="append", default=[], help=f"N or OUTPUT:N (default {DEFAULT_RTOL})"
        )
        tolerances.add_argument(
            "--atol", action="append", default=[], help=f"N or OUTPUT:N (default {DEFAULT_ATOL})"
        )
        tolerances.add_argument(
            "--rel-l2",
            action="append",
            default=[],
            help="N or OUTPUT:N: an output's ‖got−want‖/‖want‖ limit (default max(0.01, rtol))",
        )
        tolerances.add_argument(
            "--statistic",
            default="elemwise",
            choices=STATISTICS,
            help="judge every element (elemwise, default) or a quantile of the errors",
        )
        tolerances.add_argument(
            "--quantile", type=float, default=0.99, help="for --statistic quantile"
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ValidateRequest:
        return cls(
            **field_values(cls, args),
            torch=_torch_source(args),
            tolerances=Tolerances(
                rtol=parse_tolerance(args.rtol, DEFAULT_RTOL),
                atol=parse_tolerance(args.atol, DEFAULT_ATOL),
                statistic=args.statistic,
                quantile=args.quantile,
                rel_l2=parse_tolerance(args.rel_l2, None),
            ),
        )

    def cli_args(self) -> list[str]:
        args = field_args(self)
        if self.torch is not None:
            args += ["--torch", self.torch.spec(), *source_args(self.torch)]
        t = self.tolerances
        args += tolerance_args("--rtol", t.rtol, DEFAULT_RTOL)
        args += tolerance_args("--atol", t.atol, DEFAULT_ATOL)
        args += tolerance_args("--rel-l2", t.rel_l2, None)
        flag(args, "--statistic", t.statistic, "elemwise")
        flag(args, "--quantile", t.quantile, 0.99)
        return args

    def prepared(self, trust: bool = False) -> ValidateRequest:
        """Ready to send: files checked and made absolute, consent recorded when given, the
        app's plugin entries attached (the worker may be another interpreter)."""
        from dataclasses import replace

        from deploylens.core.files import input_file, input_folder
        from deploylens.core.plugin_api import plugin_entries

        model = input_file(self.path, "ONNX model").resolve()
        inputs = str(input_folder(self.inputs, "inputs .npz").resolve()) if self.inputs else ""
        if self.torch is not None and self.torch.kind == "python" and trust:
            grant_consent(self.torch.target)
        return replace(self, path=str(model), inputs=inputs, plugin_entries=plugin_entries())
