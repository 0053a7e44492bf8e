"""``deploylens survey``: a set of models through export, validate, support and build, one
row each — the answer to "which of these deploy, with what blockers, how close"."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploylens.core.command import Command, add_json, add_python
from deploylens.core.files import atomic_write_text


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="models and patterns: torchvision:* (the classifiers), torchvision:detection/*, "
        "timm:convnext_*, hf:DIR, FILE.py:factory, MODEL.onnx",
    )
    parser.add_argument(
        "--from",
        dest="from_file",
        type=Path,
        help="a file of specs, one per line (# starts a comment)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("survey"),
        help="where the exported models and plans go (default ./survey)",
    )
    parser.add_argument(
        "--exporter",
        default="dynamo",
        choices=["dynamo", "torchscript"],
        help="the exporter tried first (the other where it fails)",
    )
    parser.add_argument(
        "--target-cc",
        default="sm89",
        help="TensorRT-RTX build targets, comma-separated (default sm89)",
    )
    parser.add_argument("--no-validate", action="store_true", help="skip PyTorch vs ONNX Runtime")
    parser.add_argument("--no-support", action="store_true", help="skip TensorRT-RTX's parse")
    parser.add_argument("--no-build", action="store_true", help="skip the ahead-of-time builds")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="compute every row again (the cache keys rows by content)",
    )
    parser.add_argument(
        "--trust", action="store_true", help="consent to running FILE.py:factory specs"
    )
    parser.add_argument("--list", action="store_true", help="print the expanded specs and stop")
    parser.add_argument("--csv", type=Path, help="also write the rows as CSV")
    parser.add_argument("--html", type=Path, help="also write a standalone HTML report")
    add_python(parser)
    add_json(parser)


def cmd_survey(args: argparse.Namespace) -> int:
    from deploylens.core.progress_bar import terminal_progress
    from deploylens.core.results import overall_exit
    from deploylens.core.survey.report import as_csv, as_html, as_json, table
    from deploylens.core.survey.run import options_from, survey
    from deploylens.core.survey.specs import expand

    specs = expand(args.specs, str(args.from_file) if args.from_file else "")
    if args.list:
        print("\n".join(specs))
        return 0
    bar = terminal_progress("survey")
    rows = survey(specs, options_from(args), bar)
    if bar is not None:
        bar.close()
    if args.csv:
        atomic_write_text(args.csv, as_csv(rows))
    if args.html:
        atomic_write_text(args.html, as_html(rows))
    print(as_json(rows) if args.json else table(rows))
    status = overall_exit([row.verdict().exit_code for row in rows])
    if status and not args.json:
        failing = sum(1 for row in rows if row.verdict().exit_code)
        print(
            f"deploylens: {failing} of {len(rows)} model(s) did not pass every step",
            file=sys.stderr,
        )
    return status


COMMANDS = (
    Command(
        "survey",
        "many models through export, validate, TensorRT-RTX support and build: one row each",
        _arguments,
        cmd_survey,
    ),
)
