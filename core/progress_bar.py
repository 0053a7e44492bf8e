"""Progress of a worker job on the command line: one line on stderr, redrawn in place on a
terminal (a bar when the job says how far it is, a spinner and the elapsed time when it does
not); piped or captured, a plain line every few seconds once a job has run that long (a
measurement printed nothing for 15 minutes into a pipe), so a short job's stderr stays empty.

``run_job`` uses it whenever its caller gives no progress callback of its own, so every
``deploylens`` command that runs a job (diagnose swin_t: 52 s; support --sample: 14 s) shows
that it is alive."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import Any, TextIO

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


PIPED_EVERY_S = 5.0


class PipedProgress:
    """Progress into a pipe or a log: one plain line (no escape codes) every ``every`` seconds,
    the first after ``every`` seconds — a job shorter than that says nothing. ``clock``: a test
    gives its own."""

    def __init__(self, title: str, stream: TextIO, every: float = PIPED_EVERY_S,
                 clock: Any = time.monotonic) -> None:  # fmt: skip
        self.title, self.stream, self.every, self.clock = title, stream, every, clock
        self.started = self.last = clock()

    def __call__(self, fraction: float | None, text: str) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        done = f" {max(0.0, min(1.0, float(fraction))):.0%}" if fraction is not None else ""
        said = f": {text}" if text else ""
        try:
            self.stream.write(
                f"deploylens: {self.title}{done}{said} ({now - self.started:.0f} s)\n"
            )
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        pass


def terminal_progress(
    title: str, stream: TextIO | None = None
) -> TerminalProgress | PipedProgress | None:
    """A progress line for ``title`` on ``stream`` (stderr): redrawn on a terminal, a line
    every few seconds into a pipe; None when DEPLOYLENS_NO_PROGRESS is set."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("DEPLOYLENS_NO_PROGRESS"):
        return None
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return None
    return TerminalProgress(title, stream) if tty else PipedProgress(title, stream)
