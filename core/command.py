"""A ``deploylens`` subcommand: its arguments and what it runs. Rooms declare theirs in a
``cli_*.py`` module (``COMMANDS``); ``core/cli.py`` is only the registry that builds the parser
from them and dispatches."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_python(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--python", help="worker interpreter (default: the one in Preferences)")


def add_json(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
