"""The wheel installs every room as deploylens.* (a hand-written list would drop some), ships
the samples and the worker's boot script, and leaves tests/bench/packaging out."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("deploylens-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_every_source_module_is_in_the_wheel(wheel_names: set[str]) -> None:
    for folder in ("core", "gui", "plugins", "resources"):
        for source in (REPO / folder).rglob("*.py"):
            installed = "deploylens/" + source.relative_to(REPO).as_posix()
            assert installed in wheel_names, f"{installed} is missing from the wheel"


def test_samples_and_worker_boot_are_shipped(wheel_names: set[str]) -> None:
    assert "deploylens/core/worker/boot.py" in wheel_names
    for sample in (REPO / "resources" / "samples").glob("*.onnx"):
        assert f"deploylens/resources/samples/{sample.name}" in wheel_names
    assert "deploylens/resources/samples/manifest.json" in wheel_names


def test_tests_bench_packaging_are_not_installed(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names} | {
        "/".join(name.split("/")[:2]) for name in wheel_names
    }
    for unwanted in ("tests", "bench", "packaging", "deploylens/tests", "deploylens/bench"):
        assert unwanted not in tops


def test_entry_points_declare_cli_and_frontends(wheel_names: set[str]) -> None:
    assert any(name.endswith("entry_points.txt") for name in wheel_names)
