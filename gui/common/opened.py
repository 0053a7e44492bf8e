"""The model-opened part of the panel contract: what a panel hears when a model opens, one
object for all of them, so the window tells every panel in one loop (each was a hand-written
call with its own arguments, and a new panel could be forgotten)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class OpenedModel:
    """A model just opened: its path, its inputs' shapes and the project's panel tables."""

    path: str
    inputs: dict[str, list[Any]] = field(default_factory=dict)  # name → shape (dims or names)
    tables: dict[str, Any] = field(default_factory=dict)  # the project's tables, by panel

    def table(self, name: str) -> dict[str, Any] | None:
        """The project's table for one panel (``validate``, ``build``, ``surgery``), if any."""
        found = self.tables.get(name)
        return found if isinstance(found, dict) else None


class HearsModelOpened(Protocol):
    """A panel that follows the open model."""

    def model_opened(self, opened: OpenedModel) -> None: ...
