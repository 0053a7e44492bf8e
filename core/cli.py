"""``deploylens``: the GUI with no arguments (or a file), every job headless as a subcommand.

This module is only the registry: each room declares its commands (``COMMANDS`` in its
``cli_*.py``) and most fill that room's typed request. User errors print one sentence to
stderr and exit 1; a traceback is only for real bugs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from deploylens.core import __version__
from deploylens.core.blas import one_blas_thread
from deploylens.core.command import Command
from deploylens.core.errors import UserError
from deploylens.core.job_table import command_homes
from deploylens.core.worker.client import CRASHED, EXITED, START_FAILED, JobFailure

# The rooms' command modules, in the order ``deploylens --help`` lists them (a module the job
# table adds and this list does not name comes last).
HELP_ORDER = (
    "deploylens.core.model.cli_model",  # inspect
    "deploylens.core.graph.cli_graph",  # graph
    "deploylens.core.support.cli_support",  # support
    "deploylens.core.export.cli_export",  # export, diagnose
    "deploylens.core.validate.cli_validate",  # validate
    "deploylens.core.engine.cli_engine",  # engine
    "deploylens.core.trt.cli_build",  # build
    "deploylens.core.quantize.cli_quantize",  # calibrate
    "deploylens.core.surgery.cli_surgery",  # surgery
    "deploylens.core.trace.cli_trace",  # trace, profile
    "deploylens.core.cli_demo",  # demo, env
)
COMMAND_MODULES = tuple(dict.fromkeys((*HELP_ORDER, *command_homes().values())))


# Which module declares each command, so `deploylens build …` imports only the build room
# (building every room's parser imported numpy and onnx: ~0.15 s on every command): the job
# table's commands and the few that run no job. tests/core/test_cli.py checks it against what
# the modules declare.
COMMAND_HOMES = command_homes()


def commands(only: str | None = None) -> Iterator[Command]:
    """Every room's commands, or only the module that declares ``only``. A room that does not
    import (an optional dependency missing, a broken install) stands as its commands, each
    saying what is missing — the others work, ``--help`` included."""
    modules = [COMMAND_HOMES[only]] if only in COMMAND_HOMES else COMMAND_MODULES
    for module in modules:
        try:
            found = importlib.import_module(module).COMMANDS
        except Exception as exc:  # the room's own failure, never the whole CLI's
            found = [broken_command(name, module, exc) for name in _names_of(module)]
        yield from found


def _names_of(module: str) -> list[str]:
    return [name for name, home in COMMAND_HOMES.items() if home == module]


def broken_command(name: str, module: str, exc: BaseException) -> Command:
    """A command whose room could not be loaded: ``--help`` lists it as such, running it
    names the module that is missing and the line that installs it."""
    from deploylens.core.worker.probe import pip_install_line

    missing = exc.name if isinstance(exc, ModuleNotFoundError) and exc.name else ""
    why = f"needs {missing}, which does not import here" if missing else f"{type(exc).__name__}"
    hint = pip_install_line(missing) if missing else f"{module}: {str(exc)[:200]}"

    def run(_args: argparse.Namespace) -> int:
        raise UserError(f"'{name}' could not be loaded: it {why}.", hint)

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    return Command(name, f"(could not be loaded: it {why})", arguments, run)


# ``deploylens --help`` lists the commands by what a user is doing (the README's five tasks).
TASKS = (
    ("open a model", ("gui", "inspect", "graph")),
    ("check PyTorch against ONNX Runtime", ("export", "diagnose", "validate")),
    ("find what blocks TensorRT, and fix it", ("support", "surgery")),
    ("build an engine (TensorRT-RTX: no GPU needed)",
     ("build", "calibrate", "sensitivity", "calibration-study", "engine")),
    ("profile and read the timeline", ("profile", "trace", "sweep", "lab")),
    ("which of many models deploy", ("survey",)),
    ("the rest", ("demo", "env", "screenshot")),
)  # fmt: skip


def grouped_help(table: dict[str, Command]) -> str:
    """The commands under the task each serves, each with its one line of help."""
    lines = ["commands, by task:"]
    listed: set[str] = set()
    for title, names in TASKS:
        present = [n for n in names if n in table]
        if not present:
            continue
        lines.append(f"  {title}:")
        for name in present:
            lines.append(f"    {name:<18} {table[name].help}")
        listed.update(present)
    rest = [n for n in table if n not in listed]
    if rest:
        lines.append("  more:")
        lines += [f"    {name:<18} {table[name].help}" for name in rest]
    lines.append("\n`deploylens COMMAND --help` for a command's options.")
    return "\n".join(lines)


def _gui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", type=Path)


def cmd_gui(args: argparse.Namespace) -> int:
    from deploylens.core.frontends import load_frontend

    file = getattr(args, "file", None)
    return int(load_frontend("gui")([str(file)] if file else []) or 0)


GUI = Command("gui", "open the GUI", _gui_arguments, cmd_gui)


def parser_and_commands(
    only: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    parser = argparse.ArgumentParser(
        prog="deploylens",
        usage="deploylens [FILE | COMMAND ...]",
        description="DeployLens: PyTorch → ONNX → TensorRT workbench.\n"
        "With no command it opens the GUI (on FILE: a model, project, trace or engine).\n"
        "Every command that runs a worker also takes --host user@server[:port]\n"
        "[--remote-python PATH]: the worker runs there over your ssh.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"deploylens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help=argparse.SUPPRESS)
    table: dict[str, Command] = {}
    for command in (*commands(only), GUI):
        if only in COMMAND_HOMES and command.name not in (only, GUI.name):
            continue
        command.add_arguments(sub.add_parser(command.name, help=command.help))
        table[command.name] = command
    parser.epilog = grouped_help(table)
    return parser, table


HOST_BUFFERS = ("pinned", "pageable")  # ``--host pinned`` meant profile's host buffers once


def take_remote(argv: list[str]) -> tuple[list[str], str, str]:
    """``--host user@server`` and ``--remote-python PATH`` anywhere on the line (every worker
    command takes them), removed; returns (the rest, host, remote python)."""
    rest: list[str] = []
    found = {"--host": "", "--remote-python": ""}
    items = iter(argv)
    for item in items:
        name, sep, value = item.partition("=")
        if name in found:
            value = value if sep else next(items, "")
            if not value:
                raise UserError(f"{name} needs a value")
            if name == "--host" and value in HOST_BUFFERS:  # profile/sweep's old spelling
                rest += ["--host-buffers", value]
                continue
            found[name] = value
        else:
            rest.append(item)
    return rest, found["--host"], found["--remote-python"]


def main(argv: list[str] | None = None) -> int:
    one_blas_thread(os.environ)  # before any command imports numpy (core/blas.py)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv, host, remote_python = take_remote(argv)
        if host:
            from deploylens.core.jobs import use_remote

            use_remote(host, remote_python)
    except (UserError, ValueError) as exc:
        print(f"deploylens: error: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    parser, table = parser_and_commands(argv[0] if argv else None)
    if argv and not argv[0].startswith("-") and argv[0] not in table:
        argv = ["gui", *argv]  # `deploylens model.onnx` opens it in the GUI
    args = parser.parse_args(argv)
    try:
        return table.get(args.command or "gui", GUI).run(args)
    except (UserError, JobFailure) as exc:
        print(f"deploylens: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  {exc.hint}", file=sys.stderr)
        tail = getattr(exc, "stderr_tail", "")
        if tail and getattr(exc, "kind", "") in (CRASHED, EXITED, START_FAILED):
            print("  The worker's last lines:", file=sys.stderr)
            print("\n".join(f"  | {line}" for line in tail.splitlines()), file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:  # a room's optional dependency, met at run time
        from deploylens.core.worker.probe import pip_install_line

        name = args.command or "gui"
        print(f"deploylens: error: '{name}' needs the Python module '{exc.name}', which does not "
              "import here.", file=sys.stderr)  # fmt: skip
        print(f"  {pip_install_line(exc.name or '')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`deploylens … | head`, `| grep -q`): it had what it wanted, so
        # this is success — exit 1 failed `set -o pipefail` scripts (the package smoke test's
        # `deploylens env | grep -q`). Point stdout at /dev/null so the interpreter's final
        # flush does not fail again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 0


if __name__ == "__main__":
    sys.exit(main())
