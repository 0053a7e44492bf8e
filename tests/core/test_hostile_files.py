"""Files that are not files: a FIFO (blocks ``open`` forever), ``/dev/zero`` (reads until memory
runs out), a symlink loop, a broken link, a folder, a NUL byte or an overlong name — given to
every command that reads one. Each must end in exit 1 and one sentence that names the path and
says what it is, never a hang, a traceback or "does not exist" for something that exists."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploylens.core.cli import main

MODEL = Path(__file__).resolve().parents[2] / "resources" / "samples" / "small_cnn.dynamo.onnx"


@pytest.fixture
def layers(tmp_path: Path) -> Path:
    path = tmp_path / "layers.json"
    path.write_text(json.dumps({"Layers": [{"Name": "conv", "LayerType": "Conv"}]}))
    return path


def commands(bad: str, layers: Path) -> dict[str, list[str]]:
    model = str(MODEL)
    return {
        "inspect": ["inspect", bad],
        "graph": ["graph", bad, "--stats"],
        "support": ["support", bad, "--target", "ort-cpu"],
        "trace": ["trace", bad],
        "engine": ["engine", bad],
        "engine --profile": ["engine", str(layers), "--profile", bad],
        "engine --times": ["engine", str(layers), "--times", bad],
        "engine --log": ["engine", str(layers), "--log", bad],
        "build --settings": ["build", model, "--settings", bad],
        "build model": ["build", bad],
        "validate --inputs": ["validate", model, "--inputs", bad],
        "validate --open": ["validate", "--open", bad],
        "validate model": ["validate", bad],
        "calibrate --data": ["calibrate", model, "--data", bad],
        "export --inputs": ["export", "sample:asinh", "--inputs", bad],
    }


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A blocking ``open`` or read is interrupted after 10 s and fails the test."""

    def timeout(*_: object) -> None:
        raise TimeoutError("the command hung on a file that is not a regular file")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _kinds(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name → (path as given, words the sentence must contain)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    return {
        "fifo": (str(fifo), "named pipe"),
        "dev_zero": ("/dev/zero", "character device"),
        "symlink_loop": (str(tmp_path / "loop_a"), "symbolic link loop"),
        "broken_link": (str(tmp_path / "dangling"), "broken symbolic link"),
        "long_name": (str(tmp_path / ("x" * 300)), "too long"),
    }


KINDS = ("fifo", "dev_zero", "symlink_loop", "broken_link", "long_name")


@pytest.mark.parametrize("kind", KINDS)
def test_every_reader_says_what_the_path_is(
    kind: str, tmp_path: Path, layers: Path, capsys: pytest.CaptureFixture[str], no_hang: None
) -> None:
    bad, words = _kinds(tmp_path)[kind]
    failures = []
    for name, argv in commands(bad, layers).items():
        code = main(argv)
        err = capsys.readouterr().err
        first = err.strip().splitlines()[0] if err.strip() else ""
        if (
            code != 1
            or "Traceback" in err
            or not first.startswith("deploylens: error: ")
            or words not in first
            or Path(bad).name[:40] not in first
        ):
            failures.append(f"{name}: exit {code}, {first or err[-300:]!r}")
    assert not failures, "\n".join(failures)


def test_a_nul_byte_in_a_path_is_one_sentence(
    capsys: pytest.CaptureFixture[str], layers: Path
) -> None:
    for name, argv in commands("bad\x00name.json", layers).items():
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1 and "NUL byte" in err and "Traceback" not in err, (name, err)


@pytest.mark.parametrize("spec", ["model.pt", "model.pt2"])
def test_a_pytorch_source_that_is_a_pipe_is_refused_before_the_worker(
    spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_hang: None
) -> None:
    os.mkfifo(tmp_path / spec)
    for argv in (
        ["export", str(tmp_path / spec)],
        ["validate", str(MODEL), "--torch", str(tmp_path / spec)],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"{spec} is a named pipe" in err and "Traceback" not in err
