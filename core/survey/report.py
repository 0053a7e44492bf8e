"""A survey's rows as the terminal table, CSV, JSON and a standalone HTML report — every
format from the same cells, so they cannot say different things."""

from __future__ import annotations

import csv
import html
import io
import json
from typing import Any

from deploylens.core.survey.rows import SKIPPED, StepCell, SurveyRow


def columns(rows: list[SurveyRow]) -> list[str]:
    """The steps in the order the rows ran them (a build column per compute capability)."""
    found: list[str] = []
    for row in rows:
        for cell in row.cells:
            if cell.step not in found:
                found.append(cell.step)
    return found


def _short(word: str, width: int) -> str:
    text = " ".join(word.split())
    return text if len(text) <= width else text[: width - 1] + "…"


MARKS = {"pass": "✓", "warn": "?", "fail": "✗", "skipped": "·"}


def brief(cell: StepCell) -> str:
    """A cell in a few words: its mark, then what it found (the exporter that worked, a
    plan's size, the blocked nodes) or its verdict's first words."""
    if cell.severity == SKIPPED:
        return "· not run"
    said = cell.detail or cell.word
    if cell.severity != "pass" and not cell.detail:
        said = cell.word
    return f"{MARKS.get(cell.severity, '?')} {said}"


def table(rows: list[SurveyRow], width: int = 28) -> str:
    """One line per model: its verdict, then each step's verdict and CPU seconds."""
    steps = columns(rows)
    head = f"{'model':32s} {'verdict':14s} " + " ".join(f"{s:{width}s}" for s in steps)
    lines = [head, "-" * len(head)]
    for row in rows:
        verdict = row.verdict()
        cells = []
        for step in steps:
            cell = row.cell(step)
            said = "—" if cell is None else f"{_short(brief(cell), width - 8)} {cell.cpu_s:5.1f}s"
            cells.append(f"{said:{width}s}")
        word = verdict.word.split(" ")[0].rstrip(":")
        lines.append(f"{_short(row.spec, 32):32s} {word:14s} " + " ".join(cells))
    totals = sum(c.cpu_s for row in rows for c in row.cells)
    lines.append(f"{len(rows)} model(s); {totals:.1f} s of CPU in the steps' processes")
    return "\n".join(lines)


def as_json(rows: list[SurveyRow]) -> str:
    data: list[dict[str, Any]] = []
    for row in rows:
        entry = row.to_dict()
        entry["verdict"] = row.verdict().to_json_dict()
        data.append(entry)
    return json.dumps({"rows": data}, indent=2)


def as_csv(rows: list[SurveyRow]) -> str:
    steps = columns(rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header = ["model", "verdict", "exit_code"]
    for step in steps:
        header += [f"{step}", f"{step} exit", f"{step} cpu_s", f"{step} detail"]
    writer.writerow(header)
    for row in rows:
        verdict = row.verdict()
        line: list[Any] = [row.spec, verdict.word, verdict.exit_code]
        for step in steps:
            cell = row.cell(step)
            if cell is None:
                line += ["", "", "", ""]
            else:
                line += [cell.word, cell.exit_code, f"{cell.cpu_s:.2f}", cell.detail]
        writer.writerow(line)
    return buffer.getvalue()


COLOURS = {"pass": "#d8f0d8", "warn": "#fdf0c8", "fail": "#f6d0d0", "skipped": "#eeeeee"}


def as_html(rows: list[SurveyRow]) -> str:
    """A standalone page (no script, no outside resource): the table, coloured by verdict."""
    steps = columns(rows)
    head = "".join(f"<th>{html.escape(s)}</th>" for s in ["model", "verdict", *steps])
    body = []
    for row in rows:
        verdict = row.verdict()
        cells = [f"<td>{html.escape(row.spec)}</td>",
                 f"<td style='background:{COLOURS[verdict.severity]}'>"
                 f"{html.escape(verdict.word)}</td>"]  # fmt: skip
        for step in steps:
            cell = row.cell(step)
            if cell is None:
                cells.append("<td></td>")
                continue
            colour = COLOURS.get(cell.severity, "#ffffff")
            title = html.escape(cell.detail, quote=True)
            cells.append(
                f"<td style='background:{colour}' title='{title}'>"
                f"{html.escape(cell.word)}<br><small>{cell.cpu_s:.1f} s CPU</small></td>"
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        "<!doctype html><meta charset='utf-8'><title>DeployLens survey</title>"
        "<style>body{font:13px sans-serif}td,th{border:1px solid #ccc;padding:4px;"
        "vertical-align:top}table{border-collapse:collapse}</style>"
        f"<table><tr>{head}</tr>{''.join(body)}</table>"
    )
