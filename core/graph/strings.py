"""Interned strings: the IR stores int32 ids, not a Python string per node (node names are
stored once each, without interning: see ``extend``)."""

from __future__ import annotations


class _Ids(dict[str, int]):
    """``ids[text]`` → its id, added on first use: a hit is a plain dict lookup, so a list
    comprehension over it interns a column at C speed."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__()
        self.texts = texts

    def __missing__(self, value: str) -> int:
        found = self[value] = len(self.texts)
        self.texts.append(value)
        return found


class StringTable:
    def __init__(self) -> None:
        self.values: list[str] = []
        self.ids = _Ids(self.values)

    def intern(self, value: str) -> int:
        return self.ids[value]

    def extend(self, column: list[str]) -> range:
        """Ids of a column added as it is, duplicates and all: for node names and the tensors
        nodes make, almost all distinct and never looked up by their text (``find`` does not
        know them); interning them only hashed each one (~0.03 s per column on 100k nodes)."""
        start = len(self.values)
        self.values.extend(column)
        return range(start, len(self.values))

    def find(self, value: str) -> int | None:
        return self.ids.get(value)

    def __getitem__(self, index: int) -> str:
        return self.values[index]

    def __len__(self) -> int:
        return len(self.values)
