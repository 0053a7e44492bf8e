"""The JSON-lines framing: partial lines, garbage and non-JSON values."""

from __future__ import annotations

import math

import pytest

from deploylens.core.worker import protocol


def test_messages_survive_arbitrary_chunking() -> None:
    data = b"".join(
        protocol.encode(m)
        for m in (protocol.progress("j1", 0.5, "half ✓"), protocol.result("j1", {"a": [1, 2]}))
    )
    decoder = protocol.LineDecoder()
    got = []
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


def test_nan_is_refused_at_the_source() -> None:
    with pytest.raises(ValueError):
        protocol.encode(protocol.result("j", math.nan))


def test_error_message_shape() -> None:
    message = protocol.error("j", protocol.USER, "bad", "fix it")
    assert set(message) == {"type", "job", "kind", "message", "hint", "traceback"}
    assert protocol.encode(message).count(b"\n") == 1
