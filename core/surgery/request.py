"""The ``surgery.apply`` request: a model, a chain of steps, where to write the result — what
``deploylens surgery`` and the Graph panel's surgery actions fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from deploylens.core.errors import UserError
from deploylens.core.files import SETTINGS_LIMIT, input_file, output_path, read_text
from deploylens.core.request_parts import cli, field_args, field_values
from deploylens.core.requests import Request
from deploylens.core.surgery.pattern_names import PATTERN_NAMES
from deploylens.core.surgery.steps import Step, step_table, steps_from_toml

if TYPE_CHECKING:
    from deploylens.core.surgery.result import SurgeryResult  # noqa: F401


@dataclass
class SurgeryRequest(Request["SurgeryResult"]):
    FILES: ClassVar[dict[str, str]] = {
        "model": "in", "output": "out", "script": "out", "inputs": "in"
    }  # fmt: skip
    # a project keeps the chain and the model it applies to (the panel picks the output)
    PROJECT_LEAVES_OUT: ClassVar[tuple[str, ...]] = ("output", "script")

    model: str = field(metadata=cli("the ONNX model to edit", positional=True, path=True))
    steps: list[Step] = field(default_factory=list)  # --steps, --fold, --pattern: by hand
    output: str = field(  # always named in a CLI line: a remote worker's output comes back here
        default="",
        metadata=cli("the edited model (default MODEL.edited.onnx)", option="--out", path=True),
    )
    script: str = field(
        default="", metadata=cli("write the onnx-graphsurgeon reproducer", path=True)
    )
    compare: bool = field(  # edited vs original through ONNX Runtime on seeded inputs
        default=True, metadata=cli("skip edited vs original", option="--no-compare", negate=True)
    )
    inputs: str = field(  # a model that takes only some inputs (a chunk length, a state)
        default="",
        metadata=cli(
            "compare on these inputs (.npz: one array per input; a folder of .npy), not seeded "
            "random ones", path=True,
        ),
    )  # fmt: skip
    check_tensorrt: bool = field(  # the installed TensorRT(-RTX) parser's verdict, where one is
        default=True, metadata=cli("skip the parser check", option="--no-tensorrt", negate=True)
    )

    def output_path(self) -> str:
        return self.output or default_output(self.model)

    def to_params(self) -> dict[str, Any]:
        """Each step with only the fields that differ from its defaults (as a steps file)."""
        params = super().to_params()
        params["steps"] = [step_table(step) for step in self.steps]
        return params

    @classmethod
    def from_fields(cls, data: Any, where: str) -> SurgeryRequest:
        """Every step checked as a steps file's are (an op's fields it ignores are refused)."""
        request = super().from_fields(data, where)
        for step in request.steps:
            step.check()
        return request

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)  # the fields' own flags; then the steps, which are not
        parser.add_argument("--steps", type=Path, help="a TOML file of [[steps]] tables")
        parser.add_argument("--fold", action="store_true", help="fold constants and simplify first")
        parser.add_argument(
            "--pattern",
            action="append",
            default=[],
            choices=list(PATTERN_NAMES),
            help="apply a built-in pattern (repeatable; after --steps)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SurgeryRequest:
        steps: list[Step] = []
        if args.fold:
            steps.append(Step(op="fold"))
        if args.steps:
            text = read_text(args.steps, "steps file (the --steps TOML)", limit=SETTINGS_LIMIT)
            steps += steps_from_toml(text, str(args.steps))
        steps += [Step(op="pattern", pattern=p) for p in args.pattern]
        if not steps:
            raise UserError("nothing to do: give --steps FILE, --fold or --pattern NAME")
        fields = field_values(cls, args)
        model = str(input_file(args.model, "ONNX model").resolve())
        output = output_path(fields["output"] or default_output(output_path(args.model)))
        script = output_path(fields["script"]) if fields["script"] else ""
        return cls(**{**fields, "model": model, "output": output, "script": script}, steps=steps)

    def cli_args(self) -> list[str]:
        args = field_args(self)
        if any(s.op != "pattern" for s in self.steps):
            return [*args, "--steps", str(Path(self.output_path()).with_suffix(".steps.toml"))]
        for step in self.steps:
            args += ["--pattern", step.pattern]
        return args


def default_output(model: str) -> str:
    """MODEL.edited.onnx beside the model, or in the outputs folder when the model is a bundled
    sample (surgery wrote into the install tree)."""
    from deploylens.core.outputs import beside

    return beside(model, ".edited.onnx")
