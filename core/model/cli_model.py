"""``deploylens inspect``: a model's summary, headless (weights stay on disk)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploylens.core.command import Command, add_json


def _inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path)
    add_json(parser)
    parser.add_argument("--no-check", action="store_true", help="skip the onnx checker")


def cmd_inspect(args: argparse.Namespace) -> int:
    from deploylens.core.jobs import REMOTE
    from deploylens.core.model.summary import ModelSummary, inspect_model
    from deploylens.core.model.summary_text import summary_text

    if REMOTE["host"]:  # --host: the host's onnx reads the file (sent there by content)
        from deploylens.core.files import input_file
        from deploylens.core.model.request import InspectRequest

        path = str(input_file(args.model, "ONNX model").resolve())
        summary: ModelSummary = InspectRequest(path, check=not args.no_check).run()
    else:  # here: no worker needed, weights stay on disk
        summary = inspect_model(args.model, check=not args.no_check)
    print(summary.to_json() if args.json else summary_text(summary))  # JSON: with its verdict
    for problem in summary.problems:
        print(f"deploylens: error: {args.model.name}: {problem}", file=sys.stderr)
    exit_code: int = summary.verdict().exit_code  # 1 when the file has problems
    return exit_code


COMMANDS = (
    Command("inspect", "summarize an ONNX model (weights stay on disk)", _inspect_arguments,
            cmd_inspect),
)  # fmt: skip
