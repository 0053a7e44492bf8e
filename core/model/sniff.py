"""What a file that is not an ONNX model is, from its first bytes — without importing onnx, so
a job that hands the file to another reader (TensorRT's parser) can refuse the usual mistakes
cheaply first."""

from __future__ import annotations

from pathlib import Path

from deploylens.core.errors import ModelLoadError
from deploylens.core.files import input_file

# Leading bytes of files people often open by mistake, with what to tell them.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (
        b"PK\x03\x04",
        "is a zip archive — most likely a PyTorch checkpoint, TorchScript or ExportedProgram "
        "file saved with torch.save/torch.jit.save/torch.export.save, not an ONNX model; "
        "export it to ONNX first (Export panel or `deploylens export`)",
    ),
    (
        b"\x80\x02",
        "is a Python pickle (an old-style PyTorch checkpoint), not an ONNX model; export it to "
        "ONNX first",
    ),
    (b"\x89HDF", "is an HDF5 file (Keras/TensorFlow weights), not an ONNX model"),
    (b"\x1f\x8b", "is gzip-compressed; decompress it first"),
    (b"ftrt", "is a serialized TensorRT engine, not an ONNX model"),
    (b"\x7fELF", "is a native library or executable, not an ONNX model"),
)


def sniff_foreign_format(head: bytes) -> str | None:
    """Why ``head`` cannot start an ONNX file, when it is a well-known other format."""
    for signature, reason in _SIGNATURES:
        if head.startswith(signature):
            return reason
    if head[:1] in (b"\x80",) and len(head) > 1 and head[1:2] in b"\x03\x04\x05":
        return "is a Python pickle (a PyTorch checkpoint), not an ONNX model"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"[", b"<"):
        return "is a text file (JSON/XML), not an ONNX model"
    return None


def check_model_file(given: str | Path) -> Path:
    """``given`` as a path when it names a regular, non-empty file that does not start like a
    well-known other format; otherwise the one-sentence ``ModelLoadError``."""
    path = input_file(given, "ONNX model")
    with path.open("rb") as handle:
        head = handle.read(16)
    if not head:
        raise ModelLoadError(f"{path.name} is empty (0 bytes), so it is not an ONNX model.")
    foreign = sniff_foreign_format(head)
    if foreign:
        raise ModelLoadError(f"{path.name} {foreign}.")
    return path
