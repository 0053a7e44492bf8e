"""Counts in sentences read as a person writes them ("1 lane", not "1 lanes")."""

from __future__ import annotations

from deploylens.core.wording import counted


def test_counted_says_one_and_many() -> None:
    assert counted(1, "lane") == "1 lane"
    assert counted(0, "lane") == "0 lanes"
    assert counted(12345, "event") == "12,345 events"
    assert counted(2, "evaluation sample") == "2 evaluation samples"
    assert counted(3, "child", "children") == "3 children"
