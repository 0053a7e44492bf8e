"""Numbers said as a person says them: "1 lane", "3 lanes", "1,024 events"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str = "") -> str:
    """``counted(1, "lane")`` → "1 lane"; ``counted(3, "lane")`` → "3 lanes"."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"
