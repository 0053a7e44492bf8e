"""What a file is, by its content: File → Open and drag-and-drop take a model, a project, a
trace or an engine's layer info or profile, whatever the file is called (the dialog refused
traces and engine JSON: they had to be opened from their own panel)."""

from __future__ import annotations

import gzip
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import input_file

ONNX, PROJECT, TRACE, ENGINE_LAYERS, ENGINE_PROFILE = (
    "onnx", "project", "trace", "engine layers", "engine profile",
)  # fmt: skip
HEAD = 64 << 10  # what is read to decide: the keys of every JSON kind sit near the start
PROJECT_SUFFIX = ".deploylens.toml"
OPEN_PATTERNS = ("*.onnx", f"*{PROJECT_SUFFIX}", "*.toml", "*.json", "*.json.gz", "*.gz",
                 "*.sqlite", "*.nsys-rep", "*.qdrep")  # fmt: skip


def file_kind(given: str | Path) -> str:
    """``"onnx"``, ``"project"``, ``"trace"``, ``"engine layers"`` or ``"engine profile"``;
    a ``UserError`` that says what the file is when it is none of them."""
    path = input_file(given, "file")
    if path.name.endswith(PROJECT_SUFFIX) or path.suffix == ".toml":
        return PROJECT
    if path.suffix in (".nsys-rep", ".qdrep"):
        return TRACE  # the trace reader says how to export it
    with open(path, "rb") as handle:
        head = handle.read(HEAD)
    if head.startswith(b"SQLite format 3"):
        return TRACE  # Nsight Systems' export
    if head.startswith(b"\x1f\x8b"):
        try:
            with gzip.open(path, "rb") as handle:
                head = handle.read(HEAD)
        except (OSError, EOFError):
            raise UserError(f"{path.name} is a damaged gzip file.") from None
        return _json_kind(head, path.name) or TRACE
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        kind = _json_kind(text, path.name)
        if kind is None:
            raise UserError(
                f"{path.name} is JSON but neither a trace (Chrome/PyTorch/Kineto, trtexec "
                "--exportTimes) nor an engine's layer info or profile (trtexec --exportLayerInfo, "
                "--exportProfile)."
            )
        return kind
    return ONNX  # a protobuf: the model reader says what is wrong with a damaged one


def _json_kind(text: bytes, name: str) -> str | None:
    from deploylens.core.trace.trtexec import sniff

    flavour = sniff(text)
    if flavour == "times":
        return TRACE
    if flavour == "profile":
        return ENGINE_PROFILE
    if b'"traceEvents"' in text or b'"ph"' in text:
        return TRACE
    if any(key in text for key in (b'"Layers"', b'"LayerType"', b'"Bindings"')):
        return ENGINE_LAYERS
    if b'"ComputeCapability"' in text:
        return ENGINE_LAYERS  # TREx device metadata: the layer reader says what it is instead
    return None


def profile_beside(layers: str | Path) -> Path | None:
    """TREx's pairs: ``X.graph.json`` ↔ ``X.profile.json`` (and trtexec's ``X.layers.json`` ↔
    ``X.profile.json``): the profile that goes with a layer-info file, when it is there."""
    path = Path(layers)
    for suffix in (".graph.json", ".layers.json"):
        if path.name.endswith(suffix):
            other = path.with_name(path.name[: -len(suffix)] + ".profile.json")
            return other if other.is_file() else None
    return None
