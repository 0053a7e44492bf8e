"""The command lines are generated from the requests' field metadata (core/request_parts.py):
every command keeps the flags it had when they were written by hand — the same option
strings, defaults, choices, repetition and help text (tests/data/cli_flags.json, recorded
from the hand-written parsers) — and a request's generated line parses back to itself."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli_flags import RECORD, flag_table


def test_no_flag_lost_or_changed() -> None:
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    live = flag_table()
    assert sorted(live) == sorted(recorded)
    for command, rows in recorded.items():
        by_option = {tuple(row["options"]): row for row in live[command]}
        for row in rows:
            key = tuple(row["options"])
            assert key in by_option, f"{command}: {key} lost"
            assert by_option[key] == row, f"{command} {key}"
        assert len(live[command]) == len(rows), f"{command}: flags added without a record"


def test_every_generated_flag_has_help() -> None:
    """A declared flag says what it does (the hand-written ones left some bare)."""
    from deploylens.core.job_table import JOBS
    from deploylens.core.request_parts import field_flags
    from deploylens.core.requests import request_class

    generated = 0
    for job in (name for name, row in JOBS.items() if row.request):
        for flag in field_flags(request_class(job)):
            assert flag.help, f"{job}: {flag.name}"
            generated += 1
    assert generated >= 10


@pytest.mark.parametrize("command", ["surgery", "validate", "export"])
def test_a_generated_line_parses_back_to_the_same_request(command: str, tmp_path) -> None:
    from deploylens.core.cli import parser_and_commands
    from deploylens.core.job_table import JOBS
    from deploylens.core.requests import request_class

    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    lines = {
        "surgery": [str(model), "--pattern", "gelu", "--out", str(tmp_path / "e.onnx"),
                    "--no-compare"],
        "validate": [str(model), "--seed", "3", "--layerwise", "--budget-mb", "64"],
        "export": ["torchvision:resnet18", "--opset", "18", "--no-optimize",
                   "--output-name", "logits", "--out", str(tmp_path / "r.onnx")],
    }  # fmt: skip
    parser, _table = parser_and_commands(command)
    cls = next(
        request_class(name) for name, job in JOBS.items() if job.request and job.command == command
    )
    first = cls.from_args(parser.parse_args([command, *lines[command]]))
    again = cls.from_args(parser.parse_args([command, *first.cli_args()]))
    assert again == first
