"""Every command's flags as ``deploylens COMMAND --help`` offers them: option strings, what
each stores, its default, choices, whether it repeats and its help text — the record that
tests/core/test_cli_flags.py holds the generated command lines to (no flag lost, none changed).

    python -m tests.helpers.cli_flags > tests/data/cli_flags.json   # after a deliberate change
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().parents[1] / "data" / "cli_flags.json"


def _value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return repr(value)


def flag_table() -> dict[str, list[dict[str, Any]]]:
    from deploylens.core.cli import parser_and_commands

    parser, table = parser_and_commands()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: dict[str, list[dict[str, Any]]] = {}
    for name in sorted(table):
        rows = []
        for action in sub.choices[name]._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            rows.append({
                "options": list(action.option_strings) or [action.dest],
                "dest": action.dest,
                "action": type(action).__name__,
                "default": _value(action.default),
                "choices": _value(list(action.choices)) if action.choices else None,
                "nargs": _value(action.nargs),
                "type": getattr(action.type, "__name__", None) if action.type else None,
                "help": action.help,
                "required": action.required,
            })  # fmt: skip
        found[name] = sorted(rows, key=lambda row: row["options"][0])
    return found


if __name__ == "__main__":
    print(json.dumps(flag_table(), indent=1, ensure_ascii=False, sort_keys=True))
