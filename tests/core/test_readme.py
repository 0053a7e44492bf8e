"""The README is read by a person in five minutes: short, its table cells short, and every
command it shows parses with today's CLI on files that exist (a README that drifts from the
tool costs a new user their first hour)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from deploylens.core.cli import parser_and_commands

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[list[str]]:
    """Every ``deploylens …`` line of the README's bash blocks, as argv (comments dropped)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            argv = shlex.split(line, comments=True)
            if argv and argv[0] == "deploylens":
                lines.append(argv)
    return lines


def test_readme_is_short_and_its_table_cells_are_lines_not_paragraphs() -> None:
    assert len(README.split()) <= 1500
    for line in README.splitlines():
        if line.startswith("|") and not set(line) <= set("|- "):
            for cell in line.strip().strip("|").split("|"):
                assert len(cell.split()) <= 40, cell[:80]


def test_readme_has_the_five_tasks_each_with_its_command_and_pictures() -> None:
    tasks = re.split(r"^### ", README.split("## Five tasks, five commands", 1)[1], flags=re.M)[1:]
    assert len(tasks) == 5
    for task in tasks:
        assert "```bash\ndeploylens " in task, task[:60]
    assert README.count("docs/screenshots/") >= 5


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a[1:3]))
def test_each_readme_command_parses_and_names_files_that_exist(argv: list[str]) -> None:
    parser, table = parser_and_commands()
    args = argv[1:]
    if args[0] not in table:  # `deploylens FILE` opens the app on a file
        assert (ROOT / args[0]).is_file(), args[0]
        return
    parser.parse_args(args)  # SystemExit on an unknown flag or a missing argument
    for word in args:
        if word.startswith("resources/"):
            assert (ROOT / word).is_file(), word


def test_readme_links_point_at_files_that_exist() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
