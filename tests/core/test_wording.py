"""Counts in sentences read as a person writes them ("1 lane", not "1 lanes")."""

from __future__ import annotations

from deploylens.core.wording import counted


def test_counted_says_one_and_many() -> None:
    assert counted(1, "lane") == "1 lane"
    assert counted(0, "lane") == "0 lanes"
    assert counted(12345, "event") == "12,345 events"
    assert counted(2, "evaluation sample") == "2 evaluation samples"
    assert counted(3, "child", "children") == "3 children"


def test_durations_take_the_unit_that_keeps_them_short() -> None:
    from deploylens.core.wording import duration_text

    assert duration_text(812.4) == "812.40 µs"
    assert duration_text(174812.78) == "174.81 ms"
    assert duration_text(1_203_550_000) == "1,203.55 s"
