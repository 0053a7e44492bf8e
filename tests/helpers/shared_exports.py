"""The heaviest exports made once per test run and shared by every test (and every xdist worker)
that needs them: swin_t takes ~10-30 s per export on these cores, and three test modules used to
export it six times. The first asker exports under a file lock; the others wait and read."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

import pytest


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """One folder per test run, seen by all xdist workers of the run (their base temps are
    siblings), never by another run."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"solo-{os.getpid()}"
    folder = factory.getbasetemp().parent / f"shared-exports-{run}"
    folder.mkdir(exist_ok=True)
    return folder


def torchvision_export(
    folder: Path, name: str, exporter: str, opset: int | None = None
) -> dict[str, Any]:
    """The ``export.run`` result for ``torchvision:NAME`` (its ``path`` the ONNX file), made
    once per run whatever the number of tests and workers asking."""
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.jobs import run_job
    from deploylens.core.plugin_api import plugin_entries
    from deploylens.core.pytorch.source import parse_spec

    stem = f"{name}_{exporter}_{opset or 'default'}"
    result_file = folder / f"{stem}.json"
    with open(folder / f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first asker exports; the rest wait here
        if result_file.is_file():
            return dict(json.loads(result_file.read_text()))
        settings = ExportSettings(
            output=str(folder / f"{stem}.onnx"), exporter=exporter, opset=opset
        )
        result = run_job(
            "export.run",
            {
                "source": parse_spec(f"torchvision:{name}").to_dict(),
                "settings": settings.to_dict(),
                "plugin_entries": plugin_entries(),
            },
        )
        answer: dict[str, Any] = result.to_dict()  # the typed ExportResult, as the wire had it
        result_file.write_text(json.dumps(answer))
        return answer
