"""A combo box's text as the typed word a request field takes (a ``Literal``): checked against
the field's words, so a panel can never send a word the job does not know."""

from __future__ import annotations

import typing
from typing import Any

from deploylens.core.errors import UserError


def word(text: str, kind: Any) -> Any:
    """``text`` when it is one of the words of the ``Literal`` ``kind``; else a ``UserError``."""
    allowed = typing.get_args(kind)
    if text not in allowed:
        raise UserError(f"'{text}' is not one of {', '.join(allowed)}.")
    return text
