"""Values from outside (TOML, JSON, worker params) checked against a dataclass's type hints.

One strict conversion for every typed object the tool reads: build settings, job requests and
the worker's params. A wrong type, an unknown (misspelt) key or a word outside a ``Literal`` is a
``UserError`` that names the key, the type it needs and the value it got — never a value passed
on to make a broken command line, and never Python's own ``TypeError`` text.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from typing import Any, TypeVar

from deploylens.core.errors import UserError

T = TypeVar("T")
_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
          list: "a list", dict: "a table", tuple: "a list"}  # fmt: skip
_PLAIN = (str, int, float, bool)  # values conform passes through as they are, of exactly these


def kind(value: Any) -> str:
    """How a TOML/JSON value reads in a message: "true (a boolean)", "'x' (a string)"."""
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    return f"{text[:40]} ({_NAMES.get(type(value), type(value).__name__)})"


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` of a dataclass, resolved once per class."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def close_match(name: str, known: typing.Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for a misspelt key, or ""."""
    found = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean '{found[0]}'?)" if found else ""


_FIELDS: dict[type, tuple[dict[str, dataclasses.Field[Any]], list[str]]] = {}


def _fields(cls: type) -> tuple[dict[str, dataclasses.Field[Any]], list[str]]:
    """A dataclass's init fields by name and the required ones, found once per class (a
    measured cache converts 30,000 cells)."""
    if cls not in _FIELDS:
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
        required = [
            name
            for name, f in fields.items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        _FIELDS[cls] = fields, required
    return _FIELDS[cls]


def from_dict(cls: type[T], data: Any, where: str) -> T:
    """A ``cls`` dataclass from ``data``, every field checked; unknown keys are errors."""
    if not isinstance(data, dict):
        raise UserError(f"{where} must be a table, not {kind(data)}.")
    fields, required = _fields(cls)
    unknown = [] if data.keys() <= fields.keys() else sorted(set(map(str, data)) - fields.keys())
    if unknown:
        raise UserError(
            f"{where}: unknown setting '{unknown[0]}'{close_match(unknown[0], fields)}."
        )
    missing = [name for name in required if name not in data]
    if missing:
        raise UserError(f"{where}: '{missing[0]}' is required.")
    annotations = hints(cls)
    values = {
        key: conform(value, annotations[key], f"{where}.{key}") for key, value in data.items()
    }
    return cls(**values)


def conform(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against ``hint`` (``int | None``, ``list[str]``, ``dict[str, float]``,
    ``tuple[list[int], ...]``, ``Literal[...]``, a nested dataclass)."""
    if type(value) is hint and (hint is str or hint is int or hint is float or hint is bool):
        return value  # the common case first: a plain value of exactly its plain type
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            if len(options) != len(typing.get_args(hint)):
                return None
            raise UserError(f"{where} is required, not null.")
        if type(value) in options and type(value) in _NAMES:  # a plain value of a plain option
            return value
        errors = []
        for option in options:
            try:
                return conform(value, option, where)
            except UserError as exc:
                errors.append(exc)
        raise errors[0]
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            words = ", ".join(str(a) for a in allowed)
            raise UserError(f"{where} must be one of {words}, not {kind(value)}.")
        return value
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, where)  # type: ignore[arg-type]
    if hint is bool:
        if not isinstance(value, bool):
            raise UserError(f"{where} must be true or false, not {kind(value)}.")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"{where} must be an integer, not {kind(value)}.")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UserError(f"{where} must be a number, not {kind(value)}.")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise UserError(f"{where} must be a string, not {kind(value)}.")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            raise UserError(f"{where} must be a list, not {kind(value)}.")
        items = typing.get_args(hint)
        if origin is tuple and items and items[-1] is not Ellipsis:
            if len(value) != len(items):
                raise UserError(f"{where} must hold {len(items)} items, not {len(value)}.")
            pairs = enumerate(zip(value, items, strict=True))
            return tuple(conform(v, t, f"{where}[{i}]") for i, (v, t) in pairs)
        item = items[0] if items else Any
        if item in _PLAIN and all(type(v) is item for v in value):
            return tuple(value) if origin is tuple else list(value)  # no message made per item
        converted = [conform(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(converted) if origin is tuple else converted
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"{where} must be a table, not {kind(value)}.")
        key_type, item = typing.get_args(hint) or (str, Any)
        if key_type is str and item in _PLAIN and _plain_items(value, item):
            return dict(value)  # a 100k-entry table of plain values: no message made per entry
        return {
            conform(_key(k, key_type, where), key_type, f"{where}.{k}"): conform(
                v, item, f"{where}.{k}"
            )
            for k, v in value.items()
        }
    raise UserError(f"{where}: this setting cannot be read from {kind(value)}.")


def _plain_items(table: dict[Any, Any], item: type) -> bool:
    """Every key a string and every value exactly ``item`` (no bool for int, no int for
    float): the table is already what ``conform`` would make of it."""
    return all(type(k) is str for k in table) and all(type(v) is item for v in table.values())


def _key(key: Any, key_type: Any, where: str) -> Any:
    """JSON keys are strings: ``{"0": "batch"}`` → ``{0: "batch"}`` where keys are ints."""
    if key_type is int and isinstance(key, str):
        try:
            return int(key)
        except ValueError:
            raise UserError(f"{where}: key '{key[:40]}' must be an integer.") from None
    return key


def to_dict(instance: Any) -> Any:
    """A dataclass (or a container of them) as plain JSON/TOML-ready values."""
    if type(instance) in _PLAIN or instance is None:
        return instance  # the common case first (a 100k-entry table is mostly these)
    if dataclasses.is_dataclass(instance) and not isinstance(instance, type):
        return {f.name: to_dict(getattr(instance, f.name)) for f in dataclasses.fields(instance)}
    if isinstance(instance, list | tuple):
        return [to_dict(v) for v in instance]
    if isinstance(instance, dict):
        return {k: to_dict(v) for k, v in instance.items()}
    return instance


class AsDict:
    """``to_dict()`` for a dataclass: its fields as JSON/TOML-ready values (what a result, a
    report row or a ``--json`` prints)."""

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = to_dict(self)
        return found
