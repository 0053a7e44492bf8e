"""``deploylens validate``: fills a ``ValidateRequest`` (or re-opens a saved result)."""

from __future__ import annotations

import argparse
from pathlib import Path

from deploylens.core.command import Command, add_json, add_python
from deploylens.core.errors import UserError
from deploylens.core.validate.request import ValidateRequest


def _arguments(parser: argparse.ArgumentParser) -> None:
    ValidateRequest.add_arguments(parser)
    out = parser.add_argument_group("results")
    out.add_argument("--trust", action="store_true", help="consent to running FILE.py")
    add_python(out)
    add_json(out)
    out.add_argument("--save", type=Path, help="write the result as JSON (re-open with --open)")
    out.add_argument("--csv", type=Path, help="write the per-node table (or outputs) as CSV")
    out.add_argument("--open", type=Path, help="show a saved result instead of running")


def cmd_validate(args: argparse.Namespace) -> int:
    from deploylens.core.validate.result import ValidationResult
    from deploylens.core.validate.saved import load_result, save_csv, save_result

    result: ValidationResult
    if args.open:
        result = load_result(args.open)
    elif args.model is None:
        raise UserError("Give a model to validate, or --open a saved result.")
    else:
        request = ValidateRequest.from_args(args).prepared(trust=args.trust)
        result = request.run(args.python)
    if args.save:
        save_result(result, args.save)
    if args.csv:
        save_csv(result, args.csv)
    print(result.to_json() if args.json else result.summary())
    return result.verdict().exit_code


COMMANDS = (
    Command(
        "validate",
        "compare ONNX Runtime with PyTorch (or an unoptimized ORT) on the same inputs; exit 1 on "
        "mismatch",
        _arguments,
        cmd_validate,
    ),
)
