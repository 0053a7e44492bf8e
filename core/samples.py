"""The bundled sample models (resources/samples): where they are and what each one shows, for
the demo, the CLI and the GUI's start page."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    name: str
    about: str
    path: Path


def samples_dir() -> Path:
    return Path(str(files("deploylens.resources") / "samples"))


def bundled_models() -> list[Path]:
    return sorted(samples_dir().glob("*.onnx"))


def sample_models() -> list[Sample]:
    """One ONNX file per sample (its dynamo export where there is one), with its description."""
    folder = samples_dir()
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["samples"]
    except (OSError, ValueError, KeyError):
        return [Sample(p.stem, "", p) for p in bundled_models()]
    found = []
    for name, entry in manifest.items():
        exports = entry.get("exports", {})
        chosen = next(
            (
                e["file"]
                for key in ("dynamo", "torchscript", *exports)
                if (e := exports.get(key)) and e.get("file")
            ),
            None,
        )
        if chosen and (folder / chosen).is_file():
            found.append(Sample(name, entry.get("about", ""), folder / chosen))
    return found
