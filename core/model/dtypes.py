"""ONNX element types: display names and sizes, without touching tensor data."""

from __future__ import annotations

# TensorProto.DataType value -> (display name, bits per element; 0 = variable, e.g. strings)
ELEMENT_TYPES: dict[int, tuple[str, int]] = {
    0: ("undefined", 0),
    1: ("float32", 32),
    2: ("uint8", 8),
    3: ("int8", 8),
    4: ("uint16", 16),
    5: ("int16", 16),
    6: ("int32", 32),
    7: ("int64", 64),
    8: ("string", 0),
    9: ("bool", 8),
    10: ("float16", 16),
    11: ("float64", 64),
    12: ("uint32", 32),
    13: ("uint64", 64),
    14: ("complex64", 64),
    15: ("complex128", 128),
    16: ("bfloat16", 16),
    17: ("float8e4m3fn", 8),
    18: ("float8e4m3fnuz", 8),
    19: ("float8e5m2", 8),
    20: ("float8e5m2fnuz", 8),
    21: ("uint4", 4),
    22: ("int4", 4),
    23: ("float4e2m1", 4),
    24: ("float8e8m0", 8),
    25: ("uint2", 2),
    26: ("int2", 2),
    27: ("float6e2m3", 6),
    28: ("float6e3m2", 6),
}


def element_type_name(elem_type: int) -> str:
    return ELEMENT_TYPES.get(elem_type, (f"type{elem_type}", 0))[0]


def tensor_bytes(elem_type: int, element_count: int) -> int | None:
    """Bytes of ``element_count`` packed elements, or None when the size varies (strings)."""
    bits = ELEMENT_TYPES.get(elem_type, ("", 0))[1]
    if bits == 0:
        return None
    return (element_count * bits + 7) // 8
