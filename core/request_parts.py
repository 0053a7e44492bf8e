"""A request's command line from its fields: each field that has a flag declares it beside
itself (``field(default=…, metadata=cli(help=…))``), and the parser's arguments, how the parsed
arguments become the fields and how the fields become a command line again all come from that
one declaration — flags, help texts and defaults cannot drift from the request they fill.

Shared parts (``Part``): keyword-only dataclasses whose fields several requests inherit,
declaring their flags the same way — profile and sweep (or calibrate, sensitivity and the
study) cannot drift apart in a default or a spelling. Parts stay flat in the request: the worker
params, a project's table and the TOML keep the field names they had.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def changed_flag(args: list[str], name: str, value: Any, default: Any) -> None:
    """Append ``name value`` when ``value`` is not the default (a CLI line holds only changes)."""
    if value != default and value is not None:
        args += [name, str(value)]


@dataclass(frozen=True)
class Flag:
    """One field of a part on the command line."""

    field: str
    help: str = ""
    type: Callable[[str], Any] | None = None  # argparse's: int, float
    choices: tuple[str, ...] | None = None
    path: bool = False  # a file or folder: given as a path, kept as text ("" for none)
    option: str = ""  # the flag when it is not the field's (--field-name by default)
    positional: bool = False  # an argument named ``option`` (or the field), not a flag
    negate: bool = False  # a bool that is on by default: the flag (--no-…) turns it off
    repeat: bool = False  # a list field: the flag is given once per item
    group: str = ""  # the --help section it is listed under ("": the command's own)
    metavar: str | None = None
    always: bool = False  # written in a command line even at its default (a reproducer's)
    required: bool = False  # a flag that must be given (a path the job writes)

    @property
    def name(self) -> str:
        if self.positional:
            return self.option or self.field
        return self.option or "--" + self.field.replace("_", "-")

    @property
    def dest(self) -> str:
        """Where argparse keeps it: its own name, as a hand-written parser had it."""
        return self.name.lstrip("-").replace("-", "_")


def cli(help: str = "", **options: Any) -> dict[str, Flag]:
    """A request field's command-line flag, as the field's metadata:
    ``inputs: str = field(default="", metadata=cli("…", path=True))``."""
    return {"cli": Flag(field="", help=help, **options)}


def field_flags(cls: Any, own: bool = False) -> list[Flag]:
    """The flags declared on ``cls``'s fields, in field order; ``own``: not its parts' (a
    request that lists a part's flags in another --help section adds those itself)."""
    skip: set[str] = set()
    if own:
        kind = cls if isinstance(cls, type) else type(cls)
        for base in kind.__mro__[1:]:
            if issubclass(base, Part) and base is not Part and dataclasses.is_dataclass(base):
                skip |= {f.name for f in dataclasses.fields(base)}
    return [
        dataclasses.replace(f.metadata["cli"], field=f.name)
        for f in dataclasses.fields(cls)
        if "cli" in f.metadata and f.name not in skip
    ]


def _default(cls: Any, name: str) -> Any:
    found = next(f for f in dataclasses.fields(cls) if f.name == name)
    if found.default is not dataclasses.MISSING:
        return found.default
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return dataclasses.MISSING


def add_field_arguments(
    cls: Any,
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    groups: dict[str, argparse._ArgumentGroup] | None = None,
    own: bool = False,
) -> None:
    """``cls``'s declared flags on ``parser`` (each in its ``group``, made on first use);
    ``own``: not its parts' (``field_flags``)."""
    groups = {} if groups is None else groups
    for flag in field_flags(cls, own):
        target: Any = parser
        if flag.group:
            if flag.group not in groups:
                assert isinstance(parser, argparse.ArgumentParser), flag.group
                groups[flag.group] = parser.add_argument_group(flag.group)
            target = groups[flag.group]
        default = _default(cls, flag.field)
        options: dict[str, Any] = {"help": flag.help or None}
        if flag.metavar is not None:
            options["metavar"] = flag.metavar
        if flag.positional:
            options["type"] = Path if flag.path else flag.type
            if default is not dataclasses.MISSING:
                options["nargs"] = "?"
        elif flag.negate or (default is False and flag.type is None):
            options["action"] = "store_true"
        elif flag.repeat:
            options.update(action="append", default=[], type=flag.type)
        elif flag.path:
            options.update(type=Path, default=None)
            if flag.required:
                options["required"] = True
        else:
            options.update(type=flag.type, default=default)
        if flag.choices:
            options["choices"] = flag.choices
        target.add_argument(flag.name, **options)


def field_values(cls: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The declared fields of ``cls`` from parsed arguments (keyword arguments)."""
    values: dict[str, Any] = {}
    for flag in field_flags(cls):
        value = getattr(args, flag.dest)
        if flag.negate:
            value = not value
        elif flag.path:
            value = str(value) if value else ""
        elif flag.repeat:
            value = list(value)
        values[flag.field] = value
    return values


def field_args(request: Any, declared_on: Any = None) -> list[str]:
    """The arguments that give ``request``'s declared fields back (only those declared on
    ``declared_on``, a part, when given): the positional ones first, then each flag whose
    value is not its default."""
    declared_on = declared_on or request
    flags = field_flags(declared_on)
    args = [str(getattr(request, f.field)) for f in flags if f.positional]
    for flag in flags:
        value, default = getattr(request, flag.field), _default(declared_on, flag.field)
        if flag.positional:
            continue
        if flag.negate:
            args += [flag.name] if not value else []
        elif flag.repeat:
            for item in value:
                args += [flag.name, str(item)]
        elif isinstance(value, bool) and flag.type is None:
            args += [flag.name] if value else []
        elif flag.always and value is not None:
            args += [flag.name, str(value)]
        else:
            changed_flag(args, flag.name, value, default)
    return args


class Part:
    """Base of the shared parts (each a ``@dataclass(kw_only=True)`` whose fields declare
    their flags with ``cli``): its flags go in the group a request gives them."""

    @classmethod
    def add_part_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_field_arguments(cls, group)

    @classmethod
    def part_values(cls, args: argparse.Namespace) -> dict[str, Any]:
        """The part's fields from parsed arguments (keyword arguments of the request)."""
        return field_values(cls, args)

    @classmethod
    def part_args(cls, request: Any) -> list[str]:
        """The flags that give this part of ``request`` back (only what differs from the
        defaults; a request may hold several parts, so each is asked by name)."""
        return field_args(request, cls)

    @classmethod
    def part_of(cls, request: Any) -> dict[str, Any]:
        """This part's fields of ``request`` (to make another request with the same part)."""
        return {f.name: getattr(request, f.name) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
