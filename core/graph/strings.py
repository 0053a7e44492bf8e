"""Interned strings: the IR stores int32 ids, not a Python string per node."""

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

    def intern_all(self, column: list[str]) -> list[int]:
        """Ids of a whole column (mostly new strings, like node names): the new ones added in
        one step instead of one ``__missing__`` call each."""
        new = [value for value in dict.fromkeys(column) if value not in self.ids]
        self.ids.update(zip(new, range(len(self.values), len(self.values) + len(new)), strict=True))
        self.values.extend(new)
        return [self.ids[value] for value in column]

    def find(self, value: str) -> int | None:
        return self.ids.get(value)

    def __getitem__(self, index: int) -> str:
        return self.values[index]

    def __len__(self) -> int:
        return len(self.values)
