"""Open an ONNX file without touching its external weights, or say in one sentence why not."""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from deploylens.core.errors import ModelLoadError, UserError
from deploylens.core.files import input_file, read_bytes
from deploylens.core.model.sniff import sniff_foreign_format
from deploylens.core.model.utf8 import TEXT_CHECK_LIMIT, is_utf8_clean

PROTOBUF_LIMIT = 2**31 - 1


def read_model(given: str | Path) -> onnx.ModelProto:
    """Parse an ONNX file's protobuf only; external weights stay on disk, untouched."""
    try:
        path = input_file(given, "ONNX model")
        size = path.stat().st_size
        if size == 0:
            raise ModelLoadError(f"{path.name} is empty (0 bytes), so it is not an ONNX model.")
        if size > PROTOBUF_LIMIT:
            raise ModelLoadError(
                f"{path.name} is {size / 2**30:.1f} GiB: an ONNX file cannot exceed 2 GiB; "
                "big models keep their weights in external data files."
            )
        data = read_bytes(path, "ONNX model", PROTOBUF_LIMIT)
    except ModelLoadError:
        raise
    except UserError as exc:
        raise ModelLoadError(exc.message, exc.hint) from None
    foreign = sniff_foreign_format(data[:16])
    if foreign:
        raise ModelLoadError(f"{path.name} {foreign}.")
    # checked before the real parse, whose copy would otherwise be held beside the check's:
    # a third copy of the weights at the peak (swin_t: 384 MB against polygraphy's 275 MB)
    text_clean = len(data) > TEXT_CHECK_LIMIT or is_utf8_clean(data)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise ModelLoadError(
            f"{path.name} is not a readable ONNX model: its protobuf does not parse "
            "(the file is truncated, corrupt, or another format)."
        ) from None
    _check_is_onnx(model, path)
    if not text_clean:
        raise ModelLoadError(
            f"{path.name} is not a readable ONNX model: a name or other text field is not "
            "UTF-8 (the file is corrupt)."
        )
    return model


def _check_is_onnx(model: onnx.ModelProto, path: Path) -> None:
    if model.ir_version <= 0 or not model.HasField("graph"):
        missing = "an IR version" if model.ir_version <= 0 else "a graph"
        raise ModelLoadError(
            f"{path.name} is not an ONNX model: it parses as protobuf but has no {missing} "
            "(truncated, or a different protobuf format such as a TensorFlow graph)."
        )
    if model.ir_version > 1000:
        raise ModelLoadError(
            f"{path.name} is not a readable ONNX model: its IR version {model.ir_version} is "
            "not one any ONNX release wrote (the file is corrupt)."
        )
    if model.ir_version > onnx.IR_VERSION:
        raise ModelLoadError(
            f"{path.name} uses ONNX IR version {model.ir_version}, newer than this onnx "
            f"{onnx.__version__} understands (up to IR {onnx.IR_VERSION}); upgrade onnx "
            "(pip install -U onnx) to open it."
        )
