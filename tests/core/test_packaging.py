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


def test_a_packaged_bundle_is_its_own_worker_and_gives_no_pip_lines(monkeypatch) -> None:
    """In a PyInstaller bundle (sys.frozen) the worker is the bundle's executable with a flag,
    a foreign interpreter boots from the bundle's source copy, and a missing module is a
    Preferences choice, not a pip command into a bundle."""
    import os

    from deploylens.core.frozen import SOURCE_FOLDER, WORKER_FLAG
    from deploylens.core.worker.launch import boot_script, package_folders, worker_argv
    from deploylens.core.worker.probe import pip_install_line

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", "/opt/deploylens/_internal", raising=False)
    assert worker_argv() == [sys.executable, WORKER_FLAG]
    assert worker_argv("/envs/train/bin/python") == [
        "/envs/train/bin/python",
        os.path.join("/opt/deploylens/_internal", SOURCE_FOLDER, "core", "worker", "boot.py"),
    ]
    assert boot_script().startswith("/opt/deploylens/_internal/deploylens-src/")
    assert set(package_folders()) == {
        "deploylens.core",
        "deploylens.plugins",
        "deploylens.resources",
    }
    hint = pip_install_line("torch")
    assert "bundle does not include torch" in hint and "pip install" not in hint
    assert pip_install_line("torch", "/envs/train/bin/python").endswith(
        "-m pip install torch==2.14.1"
    )


def test_the_packaging_files_agree(tmp_path) -> None:
    """The spec, launcher, desktop entry and MIME types name the same things (the build and its
    smoke test run in CI: make smoke)."""
    packaging = REPO / "packaging"
    desktop = (packaging / "deploylens.desktop").read_text()
    mime = (packaging / "deploylens-mime.xml").read_text()
    for mime_type in ("application/x-onnx", "application/x-deploylens-project",
                      "application/x-pytorch-trace+json"):  # fmt: skip
        assert mime_type in desktop and f'type="{mime_type}"' in mime
    assert "Exec=deploylens %f" in desktop and "Icon=deploylens" in desktop
    assert "<svg" in (packaging / "deploylens.svg").read_text()
    spec = (packaging / "deploylens.spec").read_text()
    assert '"torch"' in spec and '"tensorrt"' in spec  # never bundled
    from deploylens.core.frozen import WORKER_FLAG

    assert "WORKER_FLAG" in (packaging / "launcher.py").read_text() and WORKER_FLAG.startswith("--")


def test_presence_is_an_importable_module_not_a_metadata_folder(tmp_path, monkeypatch) -> None:
    """A PyInstaller bundle shipped torch's dist-info (a dependency's hook) without torch, and
    msgspec's code without its dist-info: `deploylens env` said torch 2.14.1 and msgspec
    missing. Both are built here for a module this venv lacks (tensorrt)."""
    import importlib

    from deploylens.core.worker.probe import NO_METADATA, installed_version

    metadata_only = tmp_path / "metadata_only"
    (metadata_only / "tensorrt-10.0.0.dist-info").mkdir(parents=True)
    (metadata_only / "tensorrt-10.0.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tensorrt\nVersion: 10.0.0\n"
    )
    monkeypatch.syspath_prepend(str(metadata_only))
    importlib.invalidate_caches()
    assert installed_version("tensorrt") is None

    code_only = tmp_path / "code_only"
    (code_only / "tensorrt").mkdir(parents=True)
    (code_only / "tensorrt" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(code_only), *sys.path[1:]])
    importlib.invalidate_caches()
    assert installed_version("tensorrt") == NO_METADATA


def test_an_interpreter_without_torch_does_not_need_torchs_exporter() -> None:
    """The bundle excludes torch and onnxscript on purpose: `deploylens env` there exited 1
    ("the worker needs onnxscript") and failed the packaged smoke test. onnxscript serves
    only torch's exporter, so it is a need where torch is, and an option where it is not."""
    from deploylens.core.environment import Environment
    from deploylens.core.results import typed_result
    from deploylens.core.worker.probe import environment_report

    report = environment_report(deep=False)
    for name in ("torch", "onnxscript", "msgspec"):
        report["packages"][name]["version"] = None
    no_torch: Environment = typed_result("env.probe", report)
    assert no_torch.missing_needs() == ["msgspec"]
    report["packages"]["torch"]["version"] = "2.14.1"
    with_torch: Environment = typed_result("env.probe", report)
    assert with_torch.missing_needs() == ["onnxscript", "msgspec"]
    assert "onnxscript msgspec" in with_torch.install_line("onnxscript")
