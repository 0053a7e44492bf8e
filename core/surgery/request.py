"""The ``surgery.apply`` request: a model, a chain of steps, where to write the result — what
``deploylens surgery`` and the Graph panel's surgery actions fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from deploylens.core.errors import UserError
from deploylens.core.files import SETTINGS_LIMIT, input_file, output_path, read_text
from deploylens.core.requests import Request
from deploylens.core.surgery.patterns import PATTERNS
from deploylens.core.surgery.steps import Step, step_table, steps_from_toml

if TYPE_CHECKING:
    from deploylens.core.surgery.result import SurgeryResult  # noqa: F401


@dataclass
class SurgeryRequest(Request["SurgeryResult"]):
    FILES: ClassVar[dict[str, str]] = {"model": "in", "output": "out", "script": "out"}
    # a project keeps the chain and the model it applies to (the panel picks the output)
    PROJECT_LEAVES_OUT: ClassVar[tuple[str, ...]] = ("output", "script")

    model: str
    steps: list[Step] = field(default_factory=list)
    output: str = ""  # default: <model>.edited.onnx
    script: str = ""  # also write the onnx-graphsurgeon reproducer here
    compare: bool = True  # edited vs original through ONNX Runtime on seeded inputs
    check_tensorrt: bool = True  # the installed TensorRT(-RTX) parser's verdict, where there is one

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
        parser.add_argument("model", type=Path)
        parser.add_argument("--steps", type=Path, help="a TOML file of [[steps]] tables")
        parser.add_argument("--fold", action="store_true", help="fold constants and simplify first")
        parser.add_argument(
            "--pattern",
            action="append",
            default=[],
            choices=list(PATTERNS),
            help="apply a built-in pattern (repeatable; after --steps)",
        )
        parser.add_argument("--out", type=Path, help="the edited model (default MODEL.edited.onnx)")
        parser.add_argument("--script", type=Path, help="write the onnx-graphsurgeon reproducer")
        parser.add_argument("--no-compare", action="store_true", help="skip edited vs original")
        parser.add_argument("--no-tensorrt", action="store_true", help="skip the parser check")

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
        return cls(
            model=str(input_file(args.model, "ONNX model").resolve()),
            steps=steps,
            output=output_path(
                args.out or default_output(output_path(args.model))
            ),  # always named: a remote worker's output comes back here; links not followed
            script=output_path(args.script) if args.script else "",
            compare=not args.no_compare,
            check_tensorrt=not args.no_tensorrt,
        )

    def cli_args(self) -> list[str]:
        args = [self.model]
        patterns = [s.pattern for s in self.steps if s.op == "pattern"]
        if any(s.op != "pattern" for s in self.steps):
            args += ["--steps", str(Path(self.output_path()).with_suffix(".steps.toml"))]
        else:
            for name in patterns:
                args += ["--pattern", name]
        if self.output:
            args += ["--out", self.output]
        if self.script:
            args += ["--script", self.script]
        if not self.compare:
            args.append("--no-compare")
        if not self.check_tensorrt:
            args.append("--no-tensorrt")
        return args


def default_output(model: str) -> str:
    """MODEL.edited.onnx beside the model, or in the outputs folder when the model is a bundled
    sample (surgery wrote into the install tree)."""
    from deploylens.core.outputs import beside

    return beside(model, ".edited.onnx")
