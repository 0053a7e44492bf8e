"""The per-layer profile table a trtexec log prints under ``--dumpProfile``
(``=== Profile (N iterations ) ===``), read as the ``--exportProfile`` file would be: a log of
such a run may have no throughput summary at all (TREx's logs, TensorRT 10.16's
``--dumpProfile`` runs), and is then read for what it has — never called "cut short".

Two layouts, both seen in the field:

- TensorRT ≥ 8.4: ``Time(ms)  Avg.(ms)  [Median(ms)]  Time(%)  Layer`` — the numbers first;
- TensorRT ≤ 8.2: ``Layer  Time (ms)  Avg. Time (ms)  Time %`` — the name first.
"""

from __future__ import annotations

import re

# (name, total ms, average ms, median ms, share %): the fields of timings.LayerTime, in order
# (this module stays below timings, which reads logs through it)
Row = tuple[str, float, float, float, float]

_HEAD = re.compile(r"=== Profile \((\d+) iterations? ?\) ===")
_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)*?\[[IVWE]\]\s?")  # "[date] [I] " or "[I] "
_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_NUMBERS_FIRST = re.compile(rf"^\s*((?:{_NUMBER}\s+){{3,4}})(\S.*?)\s*$")
_NAME_FIRST = re.compile(rf"^\s*(\S.*?)\s+({_NUMBER})\s+({_NUMBER})\s+({_NUMBER})\s*$")
TOTAL = "Total"


def _body(line: str) -> str | None:
    """The text after trtexec's ``[I]`` mark, or None for a line without one."""
    found = _PREFIX.match(line)
    return line[found.end() :] if found else None


def parse_log_profile(text: str) -> tuple[int, list[Row]] | None:
    """(iterations, per-layer times) of the last profile table in a trtexec log; None when the
    log prints none. The table's own ``Total`` row is left out, as ``--exportProfile`` has none."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _HEAD.search(line)]
    if not starts:
        return None
    first = starts[-1]
    found = _HEAD.search(lines[first])
    assert found is not None
    iterations = int(found.group(1))
    header = _body(lines[first + 1]) if first + 1 < len(lines) else None
    if header is None:
        return iterations, []
    name_first = header.strip().startswith("Layer")
    times: list[Row] = []
    for line in lines[first + 2 :]:
        body = _body(line)
        if body is None or not body.strip() or "===" in body:
            break
        row = _row(body, name_first)
        if row is None:
            break
        if row[0] != TOTAL:
            times.append(row)
    return iterations, times


def _row(body: str, name_first: bool) -> Row | None:
    if name_first:
        match = _NAME_FIRST.match(body)
        if match is None:
            return None
        name, total, average, share = match.groups()
        return name, float(total), float(average), float(average), float(share)
    match = _NUMBERS_FIRST.match(body)
    if match is None:
        return None
    numbers = [float(n) for n in match.group(1).split()]
    name = match.group(2)
    if len(numbers) == 4:
        total, average, median, share = numbers
    else:
        total, average, share = numbers
        median = average
    return name, total, average, median, share
