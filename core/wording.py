"""Numbers said as a person says them: "1 lane", "3 lanes", "1,024 events"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str = "") -> str:
    """``counted(1, "lane")`` → "1 lane"; ``counted(3, "lane")`` → "3 lanes"."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def duration_text(us: float) -> str:
    """A duration in the unit that keeps it short: "812.40 µs", "174.81 ms", "1,203.55 s" —
    a table column then stays narrow enough to read whole at 1366 px."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:,.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:,.2f} ms"
    return f"{us:,.2f} µs"
