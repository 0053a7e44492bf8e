"""Optimization profiles written as text: ``INPUT: MIN / OPT / MAX`` (the Build panel's box, and
``deploylens build --profile``), and the shapes a model's dynamic inputs need one for."""

from __future__ import annotations

from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.trt.settings import Profile, checked_profile


def _dims(text: str) -> list[int]:
    try:
        return [int(d) for d in text.strip().lower().split("x")]
    except ValueError:
        raise UserError(
            f"profile shape '{text.strip()[:60]}' is not a shape like 1x3x224x224."
        ) from None


def parse_profiles(text: str) -> list[Profile] | None:
    """One ``input: MIN / OPT / MAX`` line per input; ``---`` starts the next profile. Every
    number is checked here, where it was typed (``checked_profile``)."""
    profiles: list[Profile] = []
    for block in text.split("---"):
        shapes = {}
        for line in filter(None, (ln.strip() for ln in block.splitlines())):
            name, sep, rest = line.rpartition(":")
            parts = rest.split("/")
            if not sep or len(parts) != 3 or not name.strip():
                raise UserError(
                    f"profile '{line[:80]}': write INPUT: MIN / OPT / MAX (e.g. x: 1x3 / 4x3 / "
                    "8x3)."
                )
            low, opt, high = (_dims(p) for p in parts)
            shapes[name.strip()] = (low, opt, high)
        if shapes:
            profiles.append(checked_profile(Profile(shapes), f"profile {len(profiles) + 1}"))
    return profiles or None


def profiles_text(profiles: list[Profile] | None) -> str:
    blocks = []
    for profile in profiles or []:
        blocks.append(
            "\n".join(
                f"{name}: " + " / ".join("x".join(map(str, s)) for s in shapes)
                for name, shapes in profile.shapes.items()
            )
        )
    return "\n---\n".join(blocks)


def parse_profile_args(items: list[str]) -> list[Profile] | None:
    """``--profile INPUT:MIN/OPT/MAX`` (repeatable): one profile with every input named; an
    empty one is refused, not dropped."""
    for item in items:
        if not item.strip():
            raise UserError("--profile '' names no input: write --profile INPUT:MIN/OPT/MAX.")
    return parse_profiles("\n".join(items)) if items else None


def unprofiled_dynamic(inputs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Inputs with a dynamic dimension other than the leading (batch) one: no default shape
    for them means anything (a sequence of 1 is a one-token engine)."""
    return {
        name: dims for name, dims in inputs.items() if any(not isinstance(d, int) for d in dims[1:])
    }
