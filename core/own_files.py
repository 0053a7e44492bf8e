"""One guarded reader for every file DeployLens writes and reads back — caches, sidecars, sweep
tables: a cache someone replaced, truncated, emptied or pointed at ``/dev/zero`` is "not cached",
never a traceback, a hang or a wrong answer.

``read_own_json`` reads a regular file only (never a FIFO or a device), at most ``limit`` bytes,
as JSON whose numbers are finite (``NaN``, ``Infinity``, ``1e400`` and integers past int64 are
refused) and whose nesting is bounded. ``check`` then holds the value to a small schema — each
key's type and range — so a value the reader accepted cannot surprise the code that uses it
(``NaN`` opsets read as "opset 18 (from inf)").

Schemas are plain values: a type (``str``, ``bool``, ``int``, ``float``); ``Range(lo, hi)`` for
a number in bounds; ``[item]`` for a list; ``{"key": schema}`` for a table whose keys must all be
there (``Optional`` marks one that may be missing); ``Table(key, value)`` for a table of any keys;
``Either(a, b)``; ``None`` for null.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import read_text

INT64 = 2**63 - 1


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    integer: bool = True


@dataclass(frozen=True)
class Table:
    key: Any
    value: Any


@dataclass(frozen=True)
class Optional:
    schema: Any


@dataclass(frozen=True)
class Either:
    first: Any
    second: Any


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number DeployLens writes")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) > INT64:
        raise ValueError(f"the integer {text[:30]}… is out of range")
    return int(text)


def parse_own_json(text: str, name: str, what: str) -> Any:
    """JSON with finite numbers, or a ``UserError`` naming ``name``; nesting is bounded by the
    parser's recursion limit (a 100,000-deep array is a sentence, not a ``RecursionError``)."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_float,
                          parse_int=_int)  # fmt: skip
    except RecursionError:
        raise UserError(f"{name} is not a readable {what}: nested too deeply.") from None
    except ValueError as exc:  # JSONDecodeError included
        raise UserError(f"{name} is not a readable {what}: {str(exc)[:200]}.") from None


def read_own_json(path: str | Path, what: str, limit: int, schema: Any = None) -> Any:
    """Our own JSON file, read back guarded (see the module), checked against ``schema``."""
    data = parse_own_json(read_text(path, what, limit=limit), Path(path).name, what)
    if schema is not None:
        check(data, schema, f"{Path(path).name}")
    return data


def check(value: Any, schema: Any, where: str) -> None:
    """``value`` holds to ``schema``, or a ``UserError`` naming where it does not."""
    if schema is None:
        if value is not None:
            raise UserError(f"{where} must be null.")
        return
    if isinstance(schema, Either):
        try:
            check(value, schema.first, where)
        except UserError:
            check(value, schema.second, where)
        return
    if isinstance(schema, type):
        _plain(value, schema, where)
        return
    if isinstance(schema, Range):
        _plain(value, int if schema.integer else float, where)
        if not schema.low <= value <= schema.high:
            raise UserError(f"{where} is {value!r:.30}, outside [{schema.low:g}, {schema.high:g}].")
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise UserError(f"{where} must be a list.")
        for index, item in enumerate(value):
            check(item, schema[0], f"{where}[{index}]")
        return
    if isinstance(schema, Table):
        if not isinstance(value, dict):
            raise UserError(f"{where} must be a table.")
        for key, item in value.items():
            check(key, schema.key, f"{where} key")
            check(item, schema.value, f"{where}.{key}")
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise UserError(f"{where} must be a table.")
        for key, item in schema.items():
            if key not in value:
                if isinstance(item, Optional):
                    continue
                raise UserError(f"{where} has no '{key}'.")
            check(value[key], item.schema if isinstance(item, Optional) else item,
                  f"{where}.{key}")  # fmt: skip
        return
    raise TypeError(f"not a schema: {schema!r}")


def _plain(value: Any, kind: type, where: str) -> None:
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = type(value) is kind
    if not ok:
        raise UserError(f"{where} must be {kind.__name__}, not {type(value).__name__}.")
