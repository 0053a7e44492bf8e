"""Progress of a worker job on the command line: one line on stderr, redrawn in place on a
terminal (a bar when the job says how far it is, a spinner and the elapsed time when it does
not), and nothing at all when stderr is piped or captured — a script's output stays clean.

``run_job`` uses it whenever its caller gives no progress callback of its own, so every
``deploylens`` command that runs a job (diagnose swin_t: 52 s; support --sample: 14 s) shows
that it is alive."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import TextIO

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
BAR_WIDTH = 24
REDRAW_S = 0.2


class TerminalProgress:
    """A callable ``(fraction | None, text)`` that draws one line; ``close()`` erases it."""

    def __init__(self, title: str, stream: TextIO) -> None:
        self.title = title
        self.stream = stream
        self.fraction: float | None = None
        self.text = ""
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticks = 0
        self._thread = threading.Thread(target=self._animate, daemon=True)
        self._thread.start()

    def __call__(self, fraction: float | None, text: str) -> None:
        with self._lock:
            self.fraction = None if fraction is None else max(0.0, min(1.0, float(fraction)))
            self.text = text or self.text
        self._draw()

    def _animate(self) -> None:
        while not self._stop.wait(REDRAW_S):
            self._draw()

    def line(self) -> str:
        """The line as drawn now (tests read it)."""
        with self._lock:
            fraction, text = self.fraction, self.text
        elapsed = time.monotonic() - self.started
        if fraction is None:
            head = SPINNER[self._ticks % len(SPINNER)]
        else:
            filled = round(fraction * BAR_WIDTH)
            head = f"[{'█' * filled}{'░' * (BAR_WIDTH - filled)}] {fraction:4.0%}"
        body = f"{head} {self.title}" + (f": {text}" if text else "")
        return f"{body}  {elapsed:5.1f} s"

    def _draw(self) -> None:
        self._ticks += 1
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = self.line()
        if len(line) > width:
            line = line[: max(width - 1, 10)] + "…"
        try:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
        except (OSError, ValueError):
            self._stop.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        try:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
        except (OSError, ValueError):
            pass


def terminal_progress(title: str, stream: TextIO | None = None) -> TerminalProgress | None:
    """A progress line for ``title`` on ``stream`` (stderr) when it is a terminal; None when
    it is piped, captured, or DEPLOYLENS_NO_PROGRESS is set."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("DEPLOYLENS_NO_PROGRESS"):
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return TerminalProgress(title, stream)
