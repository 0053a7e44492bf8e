"""CLI progress: a line redrawn in place on a terminal, nothing when piped. The end-to-end case
runs a real calibration job with stderr on a pseudo-terminal (os.openpty)."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.progress_bar import PipedProgress, TerminalProgress, terminal_progress
from tests.core.test_cli import DEPLOYLENS


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_and_a_line_every_few_seconds_when_piped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DEPLOYLENS_NO_PROGRESS", raising=False)
    piped = io.StringIO()
    now = [0.0]
    line = PipedProgress("measure", piped, every=5.0, clock=lambda: now[0])
    line(0.1, "probe 1")  # a short job says nothing
    assert piped.getvalue() == ""
    now[0] = 6.0
    line(0.42, "probe 500")
    now[0] = 7.0
    line(0.5, "probe 600")  # not before the next 5 s
    assert piped.getvalue() == "deploylens: measure 42%: probe 500 (6 s)\n"
    assert "\x1b" not in piped.getvalue()
    assert isinstance(terminal_progress("job", io.StringIO()), PipedProgress)
    stream = Terminal()
    bar = terminal_progress("calibrate", stream)
    assert isinstance(bar, TerminalProgress)
    bar(None, "collecting")
    assert "calibrate: collecting" in bar.line() and "[" not in bar.line().split()[0]
    bar(0.5, "entropy")
    assert "[" + "█" * 12 + "░" * 12 + "]  50%" in bar.line()
    bar.close()
    written = stream.getvalue()
    assert written.count("\r\x1b[2K") >= 3 and written.endswith("\r\x1b[2K")  # erased at the end


def _calibration(tmp_path: Path, samples: Path) -> list[str]:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(4):
        np.save(data / f"{i}.npy", np.random.default_rng(i).random((3, 32, 32), dtype=np.float32))
    return [DEPLOYLENS, "calibrate", str(samples / "small_cnn.dynamo.onnx"), "--data", str(data),
            "--out", str(tmp_path / "q.onnx")]  # fmt: skip


def test_a_real_job_draws_on_a_tty_and_not_into_a_pipe(samples: Path, tmp_path: Path) -> None:
    command = _calibration(tmp_path, samples)
    env = {k: v for k, v in os.environ.items() if k != "DEPLOYLENS_NO_PROGRESS"}
    piped = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert piped.returncode == 0, piped.stderr
    assert "\x1b[2K" not in piped.stderr and "\x1b[2K" not in piped.stdout
    main, child = os.openpty()
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=child, timeout=300, env=env)
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(main)
    assert proc.returncode == 0
    tty = b"".join(chunks).decode("utf-8", "replace")
    assert "\r\x1b[2K" in tty and "calibrate" in tty and "%" in tty
    out = proc.stdout.decode()
    assert "\r" not in out and out.splitlines()[0].split(":")[0] == piped.stdout.split(":")[0]
