"""Interned strings: the IR stores int32 ids, not a Python string per node."""

from __future__ import annotations


class StringTable:
    def __init__(self) -> None:
        self.values: list[str] = []
        self._ids: dict[str, int] = {}

    def intern(self, value: str) -> int:
        found = self._ids.get(value)
        if found is None:
            found = len(self.values)
            self._ids[value] = found
            self.values.append(value)
        return found

    def find(self, value: str) -> int | None:
        return self._ids.get(value)

    def __getitem__(self, index: int) -> str:
        return self.values[index]

    def __len__(self) -> int:
        return len(self.values)
