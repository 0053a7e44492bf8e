"""``deploylens demo`` and ``deploylens env``: the bundled samples end to end, and what the
worker interpreter has (kept light: the demo's imports wait until it runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from deploylens.core.command import Command, add_json, add_python


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=Path("deploylens-demo"), help="report folder (deploylens-demo)"
    )
    parser.add_argument("--python", help="worker interpreter (default: this one)")
    parser.add_argument("--no-screenshot", action="store_true", help="skip the main window's PNG")


def _env_arguments(parser: argparse.ArgumentParser) -> None:
    add_python(parser)
    add_json(parser)


def cmd_demo(args: argparse.Namespace) -> int:
    from deploylens.core.demo import run_demo

    report = run_demo(args.out, python=args.python, screenshot=not args.no_screenshot)
    opened = sum(1 for m in report["models"] if "summary" in m)
    print(f"Inspected {opened}/{len(report['models'])} bundled models in {report['seconds']} s.")
    print(f"Report: {args.out / 'report.md'}")
    if report.get("screenshot"):
        print(f"Main window: {report['screenshot']}")
    elif report.get("screenshot_error"):
        print(f"Screenshot skipped: {report['screenshot_error']}", file=sys.stderr)
    return 0 if opened == len(report["models"]) else 1


def cmd_env(args: argparse.Namespace) -> int:
    from deploylens.core.environment import Environment
    from deploylens.core.jobs import Worker
    from deploylens.core.results import typed_result
    from deploylens.core.settings import AppSettings
    from deploylens.core.worker.probe import BUNDLE_HINT

    python = args.python or AppSettings.load().worker_python or None
    worker = Worker(python)
    try:
        worker.start()
        found: Environment = typed_result("env.probe", worker.run("env.probe", {}))
    finally:
        worker.close()
    print(found.to_json() if args.json else "\n".join(found.lines()))
    if args.json:
        return 0
    missing = found.missing()
    if found.deploylens.frozen and missing:
        print(f"  not in the bundle: {', '.join(missing)}")
        print(f"  for those, {BUNDLE_HINT}")
        missing = []
    needs = found.missing_needs()
    if needs:  # one line for everything a worker job needs, before the optional ones
        print(f"  the worker needs {', '.join(needs)}: {found.install_line(needs[0])}")
    for name in missing:
        if name not in needs:
            print(f"  missing {name} ({found.packages[name].purpose}): "
                  f"{found.install_line(name, with_needs=False)}")  # fmt: skip
    return 1 if needs else 0


def _screenshot_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="an ONNX model to open")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--size", default="1400x860", help="window size, WIDTHxHEIGHT")


def cmd_screenshot(args: argparse.Namespace) -> int:
    """The main window with MODEL open, rendered offscreen (or on the display Qt is given)."""
    from deploylens.core.errors import UserError
    from deploylens.core.frontends import load_frontend

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise UserError(f"--size {args.size}: write WIDTHxHEIGHT, e.g. 1920x1080.") from None
    png = load_frontend("screenshot")(args.model, args.out, (width, height))
    print(f"wrote {png}")
    return 0


COMMANDS = (
    Command("demo", "run everything on the bundled samples", _demo_arguments, cmd_demo),
    Command("env", "what the worker interpreter has", _env_arguments, cmd_env),
    Command(
        "screenshot",
        "the main window with a model open, as a PNG (offscreen)",
        _screenshot_arguments,
        cmd_screenshot,
    ),
)
