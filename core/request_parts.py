"""Request fields several jobs share, written once: a part is a keyword-only dataclass whose
fields a request inherits, with each field's command-line flag declared beside it. Its
defaults, its flags, how ``--flag`` becomes the field and how the field becomes the CLI line
again come from that one declaration — profile and sweep (or calibrate, sensitivity and the
study) cannot drift apart in a default or a spelling.

Parts stay flat in the request: the worker params, a project's table and the TOML keep the
field names they had.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from deploylens.core.requests import flag as changed_flag


@dataclass(frozen=True)
class Flag:
    """One field of a part on the command line."""

    field: str
    help: str = ""
    type: Callable[[str], Any] | None = None  # argparse's: int, float
    choices: tuple[str, ...] | None = None
    path: bool = False  # a file or folder: given as a path, kept as text ("" for none)
    option: str = ""  # the flag when it is not the field's (--field-name by default)

    @property
    def name(self) -> str:
        return self.option or "--" + self.field.replace("_", "-")


class Part:
    """Base of the shared parts (each a ``@dataclass(kw_only=True)``)."""

    FLAGS: ClassVar[tuple[Flag, ...]] = ()

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        own = {part.field for part in cls.FLAGS}
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        return {f.name: f.default for f in fields if f.name in own}

    @classmethod
    def add_part_arguments(cls, group: argparse._ArgumentGroup) -> None:
        defaults = cls._defaults()
        for flag in cls.FLAGS:
            options: dict[str, Any] = {"dest": flag.field, "help": flag.help or None}
            if flag.path:
                options.update(type=Path, default=None)
            else:
                options.update(type=flag.type, default=defaults[flag.field])
            if flag.choices:
                options["choices"] = flag.choices
            group.add_argument(flag.name, **options)

    @classmethod
    def part_values(cls, args: argparse.Namespace) -> dict[str, Any]:
        """The part's fields from parsed arguments (keyword arguments of the request)."""
        values: dict[str, Any] = {}
        for flag in cls.FLAGS:
            value = getattr(args, flag.field)
            values[flag.field] = (str(value) if value else "") if flag.path else value
        return values

    @classmethod
    def part_args(cls, request: Any) -> list[str]:
        """The flags that give this part of ``request`` back (only what differs from the
        defaults; a request may hold several parts, so each is asked by name)."""
        defaults = cls._defaults()
        args: list[str] = []
        for part in cls.FLAGS:
            changed_flag(args, part.name, getattr(request, part.field), defaults[part.field])
        return args

    @classmethod
    def part_of(cls, request: Any) -> dict[str, Any]:
        """This part's fields of ``request`` (to make another request with the same part)."""
        return {part.field: getattr(request, part.field) for part in cls.FLAGS}
