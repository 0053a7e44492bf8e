"""``deploylens surgery MODEL [--steps S.toml] [--fold] [--pattern NAME] [--out E.onnx]``:
replay a surgery chain headless; exit 1 when the edited model no longer matches the original."""

from __future__ import annotations

import argparse

from deploylens.core.command import Command
from deploylens.core.surgery.request import SurgeryRequest
from deploylens.core.surgery.result import SurgeryResult


def _arguments(parser: argparse.ArgumentParser) -> None:
    SurgeryRequest.add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--python", help="worker interpreter (default: this one)")


def cmd_surgery(args: argparse.Namespace) -> int:
    request = SurgeryRequest.from_args(args)
    result: SurgeryResult = request.run(args.python)
    print(result.to_json() if args.json else result.summary())
    verdict: int = result.verdict().exit_code  # 1 when the edited model computes other numbers
    return verdict


COMMANDS = [
    Command(
        "surgery",
        "edit the ONNX graph: fold, patterns, extract, plugin nodes",
        _arguments,
        cmd_surgery,
    )
]
