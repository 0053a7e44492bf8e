"""Renaming a staged ONNX model into place: its external data first, the model last (the
staging folder itself is ``core.files.staged_outputs``)."""

from __future__ import annotations

import os
from pathlib import Path

import onnx

from deploylens.core.model.external_data import external_locations


def commit_staged(stage: Path, built: Path, final: str | Path) -> Path:
    """Move a staged ONNX model (``built``, inside ``stage``) to ``final``: the external data
    files it references (by relative name) first, the model itself last, each by rename;
    anything else the job left in ``stage`` goes with the folder."""
    final = Path(final)
    others = [item for item in stage.iterdir() if item != built]
    if not others:  # the usual case: one file, no need to parse it (45 MB for resnet18)
        os.replace(built, final)
        return final
    model = onnx.load(str(built), load_external_data=False)
    for location in sorted(external_locations(model)):
        source = stage / location
        if source.is_file() and source.parent == stage:
            os.replace(source, final.parent / location)
    os.replace(built, final)
    return final
