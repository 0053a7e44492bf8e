"""A killed job never leaves a half-written or unverified file under its final name, and what it
left beside it is swept by the next run. Real workers, killed with SIGKILL at named stages."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
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


def _worker_pids_of(cli_pid: int) -> list[int]:
    from deploylens.core.worker.reaper import command_line, descendants

    return [pid for pid in descendants(cli_pid) if b"boot.py" in command_line(pid)]


def _calibrate_cli(samples: Path, tmp_path: Path, images: int) -> tuple[list[str], Path]:
    data = image_folder(tmp_path / "images", images)
    output = tmp_path / "out" / "q.onnx"
    output.parent.mkdir()
    argv = [str(Path(sys.executable).with_name("deploylens")), "calibrate",
            str(samples / "small_cnn.dynamo.onnx"), "--data", str(data), "--method", "entropy",
            "--preprocess", "resize=32x32,scale=1/255", "--batch-size", "1",
            "--out", str(output)]  # fmt: skip
    return argv, output


@pytest.mark.slow
def test_killing_only_the_cli_ends_its_worker_which_writes_nothing_after(
    samples: Path, tmp_path: Path
) -> None:
    """kill -9 of the CLI alone (its worker re-parented): the worker ends within a tick, removes
    its staging folder and scratch folder, and never writes the output afterwards."""
    argv, output = _calibrate_cli(samples, tmp_path, 400)
    cli = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "DEPLOYLENS_NO_PROGRESS": "1"})  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _leftovers(output.parent):
        time.sleep(0.02)  # calibrating: its staging folder is there
    workers = _worker_pids_of(cli.pid)
    assert workers and _leftovers(output.parent), "the calibration did not start"
    scratch = [Path(p) for p in glob.glob(f"{tempfile.gettempdir()}/deploylens-worker-{cli.pid}-*")]
    os.kill(cli.pid, signal.SIGKILL)
    cli.wait()
    gone = time.monotonic() + 5
    while time.monotonic() < gone and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers), "the worker outlived its CLI"
    time.sleep(2.0)  # had it kept going, it would write now
    assert not output.exists(), "the orphaned worker wrote its output"
    assert _leftovers(output.parent) == []
    assert scratch and not any(folder.exists() for folder in scratch)


@pytest.mark.slow
def test_after_a_tree_kill_the_next_run_removes_what_was_left(
    samples: Path, tmp_path: Path
) -> None:
    """kill -9 of the CLI and its worker together (nobody can clean): the next job's start
    removes the dead worker's scratch folder, and its first write into the folder the staging
    folder."""
    argv, output = _calibrate_cli(samples, tmp_path, 400)
    cli = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "DEPLOYLENS_NO_PROGRESS": "1"},
                           start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _leftovers(output.parent):
        time.sleep(0.05)
    os.killpg(cli.pid, signal.SIGKILL)
    cli.wait()
    scratch = glob.glob(f"{tempfile.gettempdir()}/deploylens-worker-{cli.pid}-*")
    assert scratch and _leftovers(output.parent)  # nobody could clean: this is the case
    with Worker() as worker:
        worker.run("selftest.echo", {"x": 1}, timeout=60)
    assert not any(Path(folder).exists() for folder in scratch)
    argv, _ = _calibrate_cli(samples, tmp_path / "again", 8)
    again = subprocess.run([*argv[:-1], str(output)], capture_output=True, text=True,
                           timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert output.is_file() and _leftovers(output.parent) == []
