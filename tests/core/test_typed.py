"""``core.typed``: what a worker's answer or a settings file is checked against."""

from __future__ import annotations

import pytest

from deploylens.core.errors import UserError
from deploylens.core.typed import conform


def test_plain_tables_and_lists_pass_as_they_are_and_the_rest_is_still_checked() -> None:
    """Tables and lists of exactly their plain type pass without a message per entry; one
    entry of another type sends the whole value down the checking path: its conversions
    (an int for a float) and its messages (a bool is no integer, named by its key)."""
    table = {f"t{i}": i for i in range(100_000)}
    assert conform(table, dict[str, int], "shapes") == table
    assert conform(list(range(5)), list[int], "xs") == [0, 1, 2, 3, 4]
    assert conform(("a", "b"), tuple[str, ...], "names") == ("a", "b")
    converted = conform({"a": 1, "b": 2.5}, dict[str, float], "scales")
    assert converted == {"a": 1.0, "b": 2.5} and type(converted["a"]) is float
    assert [type(v) for v in conform([1, 2.0], list[float], "xs")] == [float, float]
    with pytest.raises(UserError, match=r"shapes\.t7 must be an integer, not true"):
        conform({**table, "t7": True}, dict[str, int], "shapes")
    with pytest.raises(UserError, match=r"xs\[1\] must be a string"):
        conform(["a", 3], list[str], "xs")
