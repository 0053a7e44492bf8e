"""Values written into generated Python, as literals: never pasted into source text.

Every script DeployLens writes (the surgery reproducer, the export and build scripts, a job's
"Copy as Python") goes through these helpers for every value that came from a user, a model or a
settings file. A string becomes its ``repr`` (a newline, a quote or ``\"\"\"`` stays inside the
string), a float that Python cannot spell (NaN, ±inf) becomes ``float('nan')``, a name used as an
identifier must be one, and a comment or docstring is one printable line. So whatever a file name,
a node name or a steps file holds, the script parses to the same statements.
"""

from __future__ import annotations

import keyword
import math
from typing import Any

from deploylens.core.errors import UserError


def literal(value: Any) -> str:
    """Python source that evaluates to ``value`` (str, bytes, bool, None, int, float and
    lists, tuples and dicts of them); anything else is a ``TypeError``, never ``str(value)``."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "-float('inf')"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"{type(value).__name__} has no literal form for a generated script")


def one_line(text: str, limit: int = 200) -> str:
    """``text`` as one printable line (for a comment or a docstring's words): every character
    that could end a line or the comment (newlines, carriage returns, other controls, line and
    paragraph separators) becomes ``?``."""
    cleaned = "".join(ch if ch.isprintable() else "?" for ch in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def comment(text: str) -> str:
    """A ``# …`` comment that stays one comment whatever ``text`` holds."""
    return "# " + one_line(text)


def docstring(text: str) -> str:
    """A module docstring statement: the words as a string literal (``repr``), one line."""
    return repr(one_line(text, 400))


def identifier(name: str, what: str) -> str:
    """``name`` when it is a plain Python identifier (an attribute or function name written
    into a script); otherwise a ``UserError`` naming ``what`` it was meant to be."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise UserError(f"{what} {str(name)[:60]!r} is not a Python name (letters, digits, _).")
    return name


def shell_lines(command: str) -> str:
    """A one-line shell command shown one option per line (``\\``-continued), the way a long
    trtexec or Polygraphy line is read: a pane that wraps never cuts a flag in two
    (``--saveEng`` / ``ine=…``). The words are re-quoted (``shlex.quote``), so a POSIX shell
    runs exactly the command's argv."""
    import shlex

    lines: list[list[str]] = [[]]
    for word in shlex.split(command):
        if word.startswith("-") and lines[-1]:
            lines.append([])
        lines[-1].append(shlex.quote(word))
    return " \\\n    ".join(" ".join(line) for line in lines)
