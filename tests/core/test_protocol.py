"""The JSON-lines framing: partial lines, garbage and non-JSON values."""

from __future__ import annotations

import math
from typing import Any

from deploylens.core.worker import protocol


def test_messages_survive_arbitrary_chunking() -> None:
    data = b"".join(
        protocol.encode(m)
        for m in (protocol.progress("j1", 0.5, "half ✓"), protocol.result("j1", {"a": [1, 2]}))
    )
    decoder = protocol.LineDecoder()
    got: list[Any] = []
    for index in range(len(data)):  # one byte at a time
        got.extend(decoder.feed(data[index : index + 1]))
    assert [m["type"] for m in got] == ["progress", "result"]
    assert got[0]["text"] == "half ✓"
    assert got[1]["payload"] == {"a": [1, 2]}


def test_garbage_lines_are_set_aside_not_fatal() -> None:
    decoder = protocol.LineDecoder()
    got = list(decoder.feed(b"hello from C\n[1,2]\n" + protocol.encode(protocol.shutdown())))
    assert got == [{"type": "shutdown"}]
    assert decoder.garbage == ["hello from C", "[1,2]"]


def test_non_finite_floats_cross_the_protocol() -> None:
    """A comparison of two outputs with different shapes has NaN statistics; refusing NaN
    ended validate in "non-JSON payload: Out of range float values"."""
    decoder = protocol.LineDecoder()
    payload = {"max_abs": math.nan, "max_rel": math.inf, "low": -math.inf}
    (message,) = decoder.feed(protocol.encode(protocol.result("j", payload)))
    got = message["payload"]
    assert math.isnan(got["max_abs"]) and got["max_rel"] == math.inf and got["low"] == -math.inf


def test_non_finite_floats_round_trip_through_a_real_worker() -> None:
    from deploylens.core.jobs import run_job

    echoed = run_job("selftest.echo", {"nan": math.nan, "inf": math.inf})["params"]
    assert math.isnan(echoed["nan"]) and echoed["inf"] == math.inf


def test_error_message_shape() -> None:
    message = protocol.error("j", protocol.USER, "bad", "fix it")
    assert set(message) == {"type", "job", "kind", "message", "hint", "traceback"}
    assert protocol.encode(message).count(b"\n") == 1
