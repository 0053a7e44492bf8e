"""A killed job never leaves a half-written or unverified file under its final name, and what it
left beside it is swept by the next run. Real workers, killed with SIGKILL at named stages."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from deploylens.core.export.settings import ExportSettings
from deploylens.core.files import STAGING_MARK
from deploylens.core.jobs import Worker
from deploylens.core.plugin_api import plugin_entries
from deploylens.core.pytorch.source import parse_spec
from deploylens.core.worker.client import JobFailure
from tests.core.test_calibration import image_folder

PREVIOUS = b"a previous, good export the user relies on"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if STAGING_MARK in p.name or "partial" in p.name)


def _run_and_kill(method: str, params: dict, when: str) -> None:
    worker = Worker()
    worker.start()

    def on_progress(fraction: float | None, text: str) -> None:
        if when in text and worker.pid:
            os.kill(worker.pid, signal.SIGKILL)

    try:
        with pytest.raises(JobFailure) as caught:
            worker.run(method, params, on_progress=on_progress, timeout=240)
        assert caught.value.kind == "crashed"
    finally:
        worker.close()


def _export_params(out: Path) -> dict:
    settings = ExportSettings(exporter="torchscript", opset=17, output=str(out))
    return {
        "source": parse_spec("torchvision:resnet18").to_dict(),
        "settings": settings.to_dict(),
        "plugin_entries": plugin_entries(),
    }


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["exporting", "checking"])
def test_a_killed_export_leaves_the_previous_file_alone(tmp_path: Path, stage: str) -> None:
    out = tmp_path / "resnet18.onnx"
    out.write_bytes(PREVIOUS)
    _run_and_kill("export.run", _export_params(out), stage)
    assert out.read_bytes() == PREVIOUS  # never truncated, never replaced by an unchecked model
    assert _leftovers(tmp_path)  # the killed worker's staging folder is still there…
    with Worker() as worker:  # …until the next export into the folder sweeps it
        result = worker.run("export.run", _export_params(out), timeout=240)
    assert result["ok"] and out.read_bytes() != PREVIOUS
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_killed_calibration_leaves_no_partial_model(samples: Path, tmp_path: Path) -> None:
    data = image_folder(tmp_path / "images", 12)
    output = tmp_path / "q.onnx"
    params = {
        "model": str(samples / "small_cnn.dynamo.onnx"),
        "data": str(data),
        "method": "minmax",
        "preprocess": "resize=32x32,scale=1/255",
        "batch_size": 1,
        "output": str(output),
        "evaluate": 0,
    }
    _run_and_kill("quantize.calibrate", params, "calibration batch 6")
    assert not output.exists()
    with Worker() as worker:
        worker.run("quantize.calibrate", params, timeout=240)
    assert output.is_file() and _leftovers(tmp_path) == []
