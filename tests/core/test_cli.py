"""The real ``deploylens`` console script, as users and CI call it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.onnx_models import save_with_external_data, weighty_model

DEPLOYLENS = shutil.which("deploylens", path=os.path.dirname(sys.executable)) or "deploylens"


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DEPLOYLENS, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_inspect_text(samples: Path) -> None:
    result = run_cli("inspect", str(samples / "small_cnn.dynamo.onnx"))
    assert result.returncode == 0, result.stderr
    assert "image: tensor(float32) [1, 3, 32, 32]" in result.stdout
    assert "Opsets      ai.onnx 18" in result.stdout


def test_inspect_json(samples: Path) -> None:
    result = run_cli("inspect", "--json", str(samples / "roll_dims.torchscript.onnx"))
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["opset_imports"] == {"ai.onnx": 17}
    assert data["inputs"][0]["name"] == "x"


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        (lambda d: d / "missing.onnx", "does not exist"),
        (lambda d: _write(d / "e.onnx", b""), "is empty"),
        (lambda d: _write(d / "r.onnx", os.urandom(3000)), "r.onnx"),
        (lambda d: _write(d / "ckpt.onnx", b"PK\x03\x04" + bytes(100)), "PyTorch"),
        (lambda d: d, "is a folder"),
    ],
    ids=["missing", "empty", "random", "zip", "folder"],
)
def test_inspect_bad_input_is_one_sentence(tmp_path: Path, setup, fragment: str) -> None:
    path = setup(tmp_path)
    result = run_cli("inspect", str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("deploylens: error: ") and fragment in result.stderr
    assert result.stderr.count("\n") <= 2


def test_inspect_missing_external_data_exits_non_zero(tmp_path: Path) -> None:
    path = save_with_external_data(weighty_model(2, 10), tmp_path / "m.onnx")
    (tmp_path / "weights.bin").unlink()
    result = run_cli("inspect", str(path))
    assert result.returncode == 1
    assert "external data file 'weights.bin' is missing" in result.stderr
    assert "Inputs (1)" in result.stdout  # the summary is still shown


def test_env_reports_the_worker(tmp_path: Path) -> None:
    result = run_cli("env", "--json")
    assert result.returncode == 0, result.stderr
    hello = json.loads(result.stdout)
    assert os.path.samefile(hello["python"]["executable"], sys.executable)
    text = run_cli("env").stdout
    assert "missing tensorrt" in text and "-m pip install tensorrt" in text


def test_env_with_a_bad_interpreter_is_one_sentence() -> None:
    result = run_cli("env", "--python", "/nonexistent/python")
    assert result.returncode == 1
    assert "Could not start the worker interpreter /nonexistent/python" in result.stderr
    assert "Traceback" not in result.stderr


def test_gui_without_display_says_so(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    result = subprocess.run(
        [DEPLOYLENS, str(tmp_path / "m.onnx")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1
    assert "No display found" in result.stderr


def test_demo_without_screenshot(tmp_path: Path) -> None:
    result = run_cli("demo", "--out", str(tmp_path / "demo"), "--no-screenshot")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert len(report["models"]) == 12 and all("summary" in m for m in report["models"])
    assert "small_cnn.dynamo.onnx" in (tmp_path / "demo" / "report.md").read_text()


def test_graph_stats(samples: Path) -> None:
    result = run_cli("graph", str(samples / "small_cnn.dynamo.onnx"), "--stats", "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["nodes"] == 11 and stats["hierarchy"] == "name_scopes"
    assert stats["groups"] > 4 and stats["depth"] >= 2
    assert stats["visible_boxes"] == 6 and stats["layout_s"] >= 0
    text = run_cli("graph", str(samples / "small_cnn.torchscript.onnx"), "--expand", "3").stdout
    assert "Hierarchy    node_names" in text and "expanded to depth 3" in text


def test_graph_png_headless(samples: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    overlay = tmp_path / "o.json"
    overlay.write_text('{"/stem/stem.0/Conv": 1.5, "ghost": 2}')
    result = subprocess.run(
        [
            DEPLOYLENS,
            "graph",
            str(samples / "small_cnn.torchscript.onnx"),
            "--png",
            str(tmp_path / "g.png"),
            "--expand",
            "2",
            "--overlay",
            str(overlay),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "g.png").stat().st_size > 5000
    assert "1 overlay names match no node" in result.stderr


def test_graph_bad_model_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "x.onnx").write_bytes(b"")
    result = run_cli("graph", str(tmp_path / "x.onnx"), "--png", str(tmp_path / "g.png"))
    assert result.returncode == 1 and "is empty" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_command_homes_are_the_modules_that_declare_them() -> None:
    """`deploylens CMD` imports only CMD's room, from a static table that must stay true."""
    import importlib

    from deploylens.core.cli import COMMAND_HOMES, COMMAND_MODULES

    declared = {
        command.name: module
        for module in COMMAND_MODULES
        for command in importlib.import_module(module).COMMANDS
    }
    assert declared == COMMAND_HOMES


BLOCK_ONE_ROOM = """
import importlib.abc, sys


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "msgspec":
            raise ModuleNotFoundError("No module named 'msgspec'", name="msgspec")
        return None


sys.meta_path.insert(0, Blocker())
from deploylens.core.cli import main

sys.exit(main(sys.argv[1:]))
"""


def test_a_room_that_does_not_import_leaves_the_others_working(tmp_path: Path) -> None:
    """Issue 46: with one room's dependency missing (msgspec: the trace room) ``--help`` and
    every other command ended in a traceback. Now the room's commands say what is missing and
    the line that installs it; the rest work."""
    import subprocess
    import sys

    script = tmp_path / "blocked.py"
    script.write_text(BLOCK_ONE_ROOM)
    model = Path(__file__).resolve().parents[2] / "resources/samples/small_cnn.dynamo.onnx"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    helped = run("--help")
    assert helped.returncode == 0 and "Traceback" not in helped.stderr, helped.stderr
    assert "    trace " in helped.stdout and "    inspect " in helped.stdout
    inspected = run("inspect", str(model))
    assert inspected.returncode == 0 and "Traceback" not in inspected.stderr, inspected.stderr
    traced = run("trace", str(model))
    assert traced.returncode == 1 and "Traceback" not in traced.stderr, traced.stderr
    assert "'trace' needs the Python module 'msgspec'" in traced.stderr
    assert "pip install msgspec" in traced.stderr


def test_a_command_module_that_does_not_import_stands_as_its_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A room whose module raises at import (here made to) is listed in ``--help`` as not
    loaded, with why; running one of its commands says so and exits 1; the others work."""
    import importlib

    from deploylens.core import cli

    real = importlib.import_module

    def broken(name: str, package: str | None = None) -> object:
        if name == "deploylens.core.surgery.cli_surgery":
            raise ModuleNotFoundError("No module named 'onnx_graphsurgeon'",
                                      name="onnx_graphsurgeon")  # fmt: skip
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", broken)  # the one cli.py calls
    with pytest.raises(SystemExit) as ended:
        cli.main(["--help"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    assert "surgery            (could not be loaded: it needs onnx_graphsurgeon" in out
    assert cli.main(["surgery", "x.onnx", "--fold"]) == 1
    err = capsys.readouterr().err
    assert "'surgery' could not be loaded" in err and "pip install onnx-graphsurgeon" in err


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`export --exporter/--opset/--dynamic/--out`, `sensitivity --method --metric`, `validate
    --statistic` … had no text in --help (issue 45): every option now has one."""
    import argparse

    from deploylens.core.cli import parser_and_commands

    parser, _ = parser_and_commands()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.option_strings[0]}"
        for name, command in sub.choices.items()
        for action in command._actions
        if action.option_strings and not action.help and action.option_strings[0] != "-h"
    ]
    assert silent == []
