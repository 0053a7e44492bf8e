"""The JSON-lines protocol between the app and its worker (DESIGN.md §4).

One JSON object per line, each with a ``type``. Worker → app: ``hello``, ``progress``, ``log``,
``result``, ``error``. App → worker: ``run``, ``cancel``, ``shutdown``. Bump ``PROTOCOL_VERSION``
whenever a message changes shape; the handshake refuses a worker that speaks another version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

PROTOCOL_VERSION = 1

# Error kinds a worker may report for a job.
USER = "user"
MISSING_DEPENDENCY = "missing_dependency"
INTERNAL = "internal"
CANCELLED = "cancelled"
ERROR_KINDS = (USER, MISSING_DEPENDENCY, INTERNAL, CANCELLED)

Message = dict[str, Any]


def encode(message: Message) -> bytes:
    """One message as one line of UTF-8 JSON (no embedded newlines). NaN and ±inf travel as
    JSON's ``NaN``/``Infinity`` tokens, which the decoder reads back: a statistic is NaN when
    two outputs cannot be compared, and refusing it lost the whole answer."""
    return (json.dumps(message, separators=(",", ":"), allow_nan=True) + "\n").encode("utf-8")


def hello(python: dict[str, Any], packages: dict[str, Any]) -> Message:
    return {"type": "hello", "protocol": PROTOCOL_VERSION, "python": python, "packages": packages}


def progress(job: str, fraction: float | None, text: str = "", data: Any = None) -> Message:
    """``data`` (optional): a piece of the result that is ready now, e.g. a sweep's finished
    point; an app that does not read it loses nothing, the result carries it too."""
    message = {"type": "progress", "job": job, "fraction": fraction, "text": text}
    if data is not None:
        message["data"] = data
    return message


def log(job: str | None, level: str, text: str) -> Message:
    return {"type": "log", "job": job, "level": level, "text": text}


def result(job: str, payload: Any) -> Message:
    return {"type": "result", "job": job, "payload": payload}


def error(job: str | None, kind: str, message: str, hint: str = "", traceback: str = "") -> Message:
    return {
        "type": "error",
        "job": job,
        "kind": kind,
        "message": message,
        "hint": hint,
        "traceback": traceback,
    }


def run(job: str, method: str, params: dict[str, Any]) -> Message:
    return {"type": "run", "job": job, "method": method, "params": params}


def cancel(job: str) -> Message:
    return {"type": "cancel", "job": job}


def shutdown() -> Message:
    return {"type": "shutdown"}


class LineDecoder:
    """Turns a byte stream into messages; keeps partial lines until their newline arrives."""

    def __init__(self) -> None:
        self._buffer = b""
        self.garbage: list[str] = []

    def feed(self, data: bytes) -> Iterator[Message]:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            line = raw.strip()
            if not line:
                continue
            try:
                message = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                self.garbage.append(line.decode("utf-8", "replace")[:200])
                continue
            if isinstance(message, dict) and "type" in message:
                yield message
            else:
                self.garbage.append(line.decode("utf-8", "replace")[:200])
