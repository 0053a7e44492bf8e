"""The app side of the protocol, shared by the subprocess driver (``core/jobs.py``) and the
QProcess driver (``gui/worker_client.py``): handshake checks and failure classification."""

from __future__ import annotations

import collections
import signal
from collections.abc import Iterator
from typing import Any

from deploylens.core.worker import protocol

MIN_JOB_PYTHON = (3, 10)
STDERR_TAIL_BYTES = 16_384
TAIL_LINES = 20

# Kinds of failure the GUI must tell apart (DESIGN.md §4).
START_FAILED = "start_failed"
PROTOCOL_MISMATCH = "protocol_mismatch"
CRASHED = "crashed"
EXITED = "exited"
DISCONNECTED = "disconnected"  # a remote worker's connection dropped (ssh exit 255): retry
FAILURE_KINDS = (
    START_FAILED,
    PROTOCOL_MISMATCH,
    CRASHED,
    EXITED,
    DISCONNECTED,
    *protocol.ERROR_KINDS,
)
SSH_FAILED = 255


class JobFailure(Exception):
    """A job that did not return a result, with what the user needs to know."""

    def __init__(
        self,
        kind: str,
        message: str,
        hint: str = "",
        traceback: str = "",
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint
        self.traceback = traceback
        self.stderr_tail = stderr_tail

    @property
    def is_user_facing(self) -> bool:
        """True when the message alone is the whole story (no traceback dialog)."""
        return self.kind in (protocol.USER, protocol.MISSING_DEPENDENCY, protocol.CANCELLED)

    def __str__(self) -> str:
        return self.message + ("\n" + self.hint if self.hint else "")


class WorkerSession:
    """Protocol state of one worker process, fed bytes by whatever transport runs it."""

    def __init__(self, python: str, remote: str = "") -> None:
        self.python = python
        self.remote = remote  # "user@server" when the worker runs there over ssh
        self.decoder = protocol.LineDecoder()
        self.hello: dict[str, Any] | None = None
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0

    def feed_stdout(self, data: bytes) -> Iterator[dict[str, Any]]:
        yield from self.decoder.feed(data)

    def feed_stderr(self, data: bytes) -> None:
        self._stderr.append(data)
        self._stderr_size += len(data)
        while self._stderr_size > STDERR_TAIL_BYTES and len(self._stderr) > 1:
            self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self, lines: int = TAIL_LINES) -> str:
        """The last ``lines`` lines; after a native crash, from faulthandler's "Fatal Python
        error" line on (the signal and the crashing thread come first, other threads after)."""
        all_lines = b"".join(self._stderr).decode("utf-8", "replace").rstrip().splitlines()
        fatal = [i for i, line in enumerate(all_lines) if line.startswith("Fatal Python error")]
        if fatal:
            return "\n".join(all_lines[fatal[-1] : fatal[-1] + 2 * lines])
        return "\n".join(all_lines[-lines:])

    def accept_hello(self, message: dict[str, Any]) -> None:
        """Check the handshake; raise ``JobFailure`` with a precise sentence if it is unusable."""
        got = message.get("protocol")
        version = tuple((message.get("python") or {}).get("version_info") or ())
        if version and version < MIN_JOB_PYTHON:
            raise JobFailure(
                PROTOCOL_MISMATCH,
                "The worker interpreter {} is Python {}; DeployLens jobs need Python {}.{} or "
                "newer.".format(self.python, ".".join(map(str, version)), *MIN_JOB_PYTHON),
                "Pick another interpreter in Preferences → Worker interpreter.",
            )
        if got != protocol.PROTOCOL_VERSION:
            raise JobFailure(
                PROTOCOL_MISMATCH,
                f"The worker at {self.python} speaks protocol version {got}, but this DeployLens "
                f"speaks version {protocol.PROTOCOL_VERSION}.",
                "The worker code comes from another DeployLens version: reinstall DeployLens, "
                "or pick another interpreter in Preferences.",
            )
        self.hello = message

    def failure_from_error(self, message: dict[str, Any]) -> JobFailure:
        return JobFailure(
            str(message.get("kind") or protocol.INTERNAL),
            str(message.get("message") or "unknown error"),
            str(message.get("hint") or ""),
            str(message.get("traceback") or ""),
            self.stderr_tail(),
        )

    def failure_from_exit(self, returncode: int | None, method: str = "") -> JobFailure:
        """Why the process ended without answering: native crash, early exit, or no handshake."""
        tail = self.stderr_tail()
        what = f" while running '{method}'" if method else ""
        if self.remote:
            if returncode == SSH_FAILED:
                return JobFailure(
                    DISCONNECTED,
                    f"The connection to {self.remote} dropped{what}.",
                    "The remote worker is gone with it; run the job again (the code stays "
                    "cached there, so a retry starts at once).",
                    stderr_tail=tail,
                )
            if self.hello is None and returncode == 127:
                return JobFailure(
                    START_FAILED,
                    f"There is no Python '{self.python}' on {self.remote}.",
                    "Give the remote interpreter's path with --remote-python (or in Preferences).",
                    stderr_tail=tail,
                )
            if returncode is not None and 128 < returncode < 128 + 65:
                returncode = -(returncode - 128)  # the remote shell reports a signal as 128+N
        if self.hello is None:
            return JobFailure(
                START_FAILED,
                f"The worker interpreter {self.python} exited before the handshake "
                f"(exit code {returncode}).",
                "Check that it is a working Python {}.{}+ interpreter.".format(*MIN_JOB_PYTHON),
                stderr_tail=tail,
            )
        ray = _ray_abort(tail)
        if ray:  # Ray's core worker aborted the job's process while starting: said, with the way on
            return JobFailure(
                CRASHED,
                f"Ray aborted the worker while starting{what} ({ray}).",
                "Run without Ray: --executor worker (Ray maps more memory or address space "
                "than this process may; the last lines are below).",
                stderr_tail=tail,
            )
        if returncode is not None and returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"signal {-returncode}"
            if -returncode == signal.SIGKILL:
                return JobFailure(
                    CRASHED,
                    f"The worker was killed (SIGKILL){what}.",
                    "Nothing in DeployLens sent it: most often the system ran out of memory "
                    "and its out-of-memory killer stopped the biggest process. The app is fine.",
                    stderr_tail=tail,
                )
            return JobFailure(
                CRASHED,
                f"The worker crashed in native code ({name}){what}.",
                "The app is fine; the job's process died. The last lines it wrote are below.",
                stderr_tail=tail,
            )
        return JobFailure(
            EXITED,
            f"The worker exited unexpectedly with code {returncode}{what}.",
            stderr_tail=tail,
        )


RAY_MARKERS = ("Check failed", "mmap failed", "Fatal", "Assertion", "Aborted")


def _ray_abort(tail):
    # type: (str) -> str
    """Ray's own words where its native code ended the process (its stack names _raylet)."""
    if "ray/_raylet" not in tail:
        return ""
    for line in tail.splitlines():
        if any(marker in line for marker in RAY_MARKERS):
            return line.strip().lstrip("| ")[:200]
    return "its core worker aborted in native code"
