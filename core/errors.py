"""Error classes shared by the CLI, the worker and the GUI.

A ``UserError`` is the user's to fix (bad file, impossible setting): it is shown as one sentence,
never with a traceback. Everything else is a bug and keeps its traceback for the details dialog.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input: shown as a message, never as a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ModelLoadError(UserError):
    """A file that cannot be opened as an ONNX model."""


class ProjectFileError(UserError):
    """A project file that cannot be read or written."""
