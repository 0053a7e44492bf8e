"""Mutations shared by the generators: bytes, JSON values and hostile strings."""

from __future__ import annotations

import copy
import gzip
import json
import re
from typing import Any

import numpy as np

WEIRD_STRINGS = (
    "",
    "::",
    "a::b",
    "Conv::Relu",
    "x" * 300,
    "/" * 500,
    "é中文",
    "nul\x00byte",
    "../../etc/passwd",
    "${HOME}",
    "'; DROP TABLE",
    " ",
    "\n",
)
WEIRD_NUMBERS = (
    0,
    -1,
    1,
    2**31,
    2**63 - 1,
    2**63,
    2**64,
    10**30,
    -(10**25),
    1e300,
    -1e300,
    1e-300,
    0.5,
)


def weird_value(rng: np.random.Generator, depth: int = 0) -> Any:
    """A JSON value of a type a reader may not expect."""
    choice = int(rng.integers(0, 9))
    if choice == 0:
        return WEIRD_STRINGS[int(rng.integers(0, len(WEIRD_STRINGS)))]
    if choice == 1:
        return WEIRD_NUMBERS[int(rng.integers(0, len(WEIRD_NUMBERS)))]
    if choice == 2:
        return None
    if choice == 3:
        return bool(rng.integers(0, 2))
    if choice == 4 and depth < 3:
        return [weird_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    if choice == 5 and depth < 3:
        return {"k": weird_value(rng, depth + 1)}
    if choice == 6:
        return f"__DEEP_{int(rng.choice([5, 200, 1200]))}__"  # spelled out by ``dumps``
    if choice == 7:
        return "9" * int(rng.choice([20, 400, 5000]))  # digits as text
    return float(rng.normal()) * 10 ** int(rng.integers(-5, 20))


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):
            found += _paths(item, (*prefix, index))
    return found


def mutate_json(value: Any, rng: np.random.Generator, edits: int = 1) -> Any:
    """Replace, delete or duplicate values at random places of a JSON document."""
    value = copy.deepcopy(value)
    for _ in range(edits):
        paths = _paths(value)[1:]
        if not paths:
            return weird_value(rng)
        path = paths[int(rng.integers(0, len(paths)))]
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = int(rng.integers(0, 4))
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, list):
            parent.insert(int(key), copy.deepcopy(parent[key]))
        else:
            parent[key] = weird_value(rng)
    return value


_DEEP = re.compile(r'"__DEEP_(\d+)__"')


def dumps(value: Any) -> bytes:
    """JSON as Python writes it (NaN/Infinity tokens included, as some tools do); a deep-nesting
    placeholder becomes that many brackets (json.dumps itself cannot write them)."""
    text = json.dumps(value)
    return _DEEP.sub(lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), text).encode()


def mutate_bytes(original: bytes, rng: np.random.Generator) -> bytes:
    """Truncate, flip, insert, zero or repeat bytes."""
    data = bytearray(original)
    action = int(rng.integers(0, 6))
    if not data:
        return bytes(rng.integers(0, 256, 64, dtype=np.uint8))
    at = int(rng.integers(0, len(data)))
    if action == 0:
        return bytes(data[:at])
    if action == 1:
        for _ in range(int(rng.integers(1, 16))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        return bytes(data)
    if action == 2:
        return bytes(data[:at] + bytes(rng.integers(0, 256, 32, dtype=np.uint8)) + data[at:])
    if action == 3:
        end = min(len(data), at + int(rng.integers(1, 256)))
        data[at:end] = b"\x00" * (end - at)
        return bytes(data)
    if action == 4:
        return bytes(data[:at] + data[at : at + 4096] * 3 + data[at:])
    return bytes(rng.integers(0, 256, int(rng.integers(1, 4096)), dtype=np.uint8))


def gzipped(data: bytes, rng: np.random.Generator, corrupt: bool) -> bytes:
    packed = bytearray(gzip.compress(data))
    if corrupt and len(packed) > 40:
        at = int(rng.integers(12, len(packed) - 8))
        packed[at : at + 8] = bytes(rng.integers(0, 256, 8, dtype=np.uint8))
    return bytes(packed)
