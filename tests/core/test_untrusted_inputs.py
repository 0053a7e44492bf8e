"""What a file someone else made may not do, by class, each case built here: a ``.pt2`` that
carries native code (an AOTInductor package whose library constructor writes a marker) or a
decompression bomb; a model whose external data leaves its folder (through ``..``, an absolute
path or a symlink) in front of every reader — TensorRT-RTX's parser, surgery, calibration,
sensitivity, the graph's tensor statistics, the remote send; a settings file that names a plugin
library; an output named through a symlink."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.consent import grant_consent, require_library_consent
from deploylens.core.errors import UserError
from deploylens.core.guard import check_model_file
from deploylens.core.pytorch.pt2_archive import load_exported_program
from deploylens.core.requests import REQUESTS, request_class
from deploylens.core.worker.transfer import companions
from tests.helpers.onnx_models import chain_model

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))
MARKER_BYTES = b"DEPLOYLENS-SECRET-MARKER-0123456789" * 4  # 140 bytes, 35 float32s


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DEPLOYLENS, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "DEPLOYLENS_NO_PROGRESS": "1"},
    )  # fmt: skip


# -- .pt2: native code and decompression bombs ----------------------------------------------------
def _library(folder: Path, marker: Path) -> Path | None:
    """A shared library whose constructor creates ``marker`` (gcc; None without a compiler)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        return None
    source = folder / "evil.c"
    source.write_text(
        "#include <stdio.h>\n__attribute__((constructor)) static void run(void) {\n"
        f'  FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n}}\n'
    )
    library = folder / "evil.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


class _Tiny(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu()


def _archive_with(folder: Path, extra: dict[str, bytes], compress: bool = False) -> Path:
    clean = folder / "clean.pt2"
    torch.export.save(torch.export.export(_Tiny(), (torch.randn(1, 4),)), str(clean))
    hostile = folder / "hostile.pt2"
    with zipfile.ZipFile(clean) as old, zipfile.ZipFile(hostile, "w") as new:
        prefix = old.namelist()[0].split("/")[0]
        for info in old.infolist():
            new.writestr(info, old.read(info.filename))
        for name, data in extra.items():
            method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            new.writestr(f"{prefix}/{name}", data, compress_type=method)
    return hostile


def test_a_pt2_carrying_native_code_is_refused_before_torch_sees_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran.marker"
    library = _library(tmp_path, marker)
    if library is None:
        pytest.fail("gcc is needed to build the hostile library (make installs build-essential)")
    cases = {
        "aotinductor": {"data/aotinductor/model/model.so": library.read_bytes(),
                        "data/aotinductor/model/model_metadata.json": b"{}"},
        "so": {"data/extra/plugin.so": library.read_bytes()},
        "cpp": {"data/extra/kernel.cpp": b"int main(){}"},
        "cubin": {"data/extra/kernel.cubin": b"\x7fELF"},
    }  # fmt: skip
    for index, (name, members) in enumerate(cases.items()):
        folder = tmp_path / name
        folder.mkdir()
        hostile = _archive_with(folder, members)
        with pytest.raises(UserError) as refused:
            load_exported_program(hostile)
        assert "native code" in refused.value.message, name
        if index == 0:  # the same file through the CLI's readers: one sentence, exit 1
            for args in (["export", str(hostile)], ["diagnose", str(hostile)],
                         ["validate", str(MODEL), "--torch", str(hostile)]):  # fmt: skip
                run = _cli(*args)
                assert run.returncode == 1 and "native code" in run.stderr, (args, run.stderr)
                assert "Traceback" not in run.stderr
    assert not marker.exists(), "a library constructor ran"


def test_a_pt2_decompression_bomb_is_refused_unread(tmp_path: Path) -> None:
    bomb = _archive_with(tmp_path, {"data/weights/bomb": bytes(80 << 20)}, compress=True)
    assert bomb.stat().st_size < 2 << 20  # 80 MiB of zeros deflate to ~80 KB
    with pytest.raises(UserError) as refused:
        load_exported_program(bomb)
    assert "decompression bomb" in refused.value.message


MODEL = Path(__file__).resolve().parents[2] / "resources" / "samples" / "small_cnn.dynamo.onnx"


# -- external data that leaves the model's folder ------------------------------------------------
def _external_model(folder: Path, how: str) -> Path:
    """x(1,35) + w → y, ``w`` (35 float32s) stored as external data that points outside
    ``folder`` ``how``: "dotdot", "absolute", "symlink"; "inside" is a legitimate file."""
    outside = folder.parent / f"outside-{how}"
    outside.mkdir(exist_ok=True)
    secret = outside / "secret.bin"
    secret.write_bytes(MARKER_BYTES)
    folder.mkdir(parents=True, exist_ok=True)
    location = {
        "dotdot": f"../outside-{how}/secret.bin",
        "absolute": str(secret),
        "symlink": "weights.bin",
        "inside": "weights.bin",
    }[how]
    if how == "symlink":
        (folder / "weights.bin").symlink_to(secret)
    elif how == "inside":
        (folder / "weights.bin").write_bytes(np.ones(35, np.float32).tobytes())
    weight = numpy_helper.from_array(np.zeros(35, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "140")):
        weight.external_data.add(key=key, value=value)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 35])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 35])], [weight],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _no_marker_under(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and "outside-" not in str(path):
            assert MARKER_BYTES[:24] not in path.read_bytes(), f"{path} holds the secret's bytes"


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_every_reader_refuses_external_data_outside_the_models_folder(
    how: str, tmp_path: Path
) -> None:
    model = _external_model(tmp_path / "model", how)
    with pytest.raises(UserError) as refused:
        check_model_file(model)
    assert "outside the model's folder" in refused.value.message
    # every job that reads weights: its request refuses the model before the job runs
    readers = [job for job in REQUESTS if request_class(job).READS_WEIGHTS
               and {"model", "path"} & set(request_class(job).FILES)]  # fmt: skip
    assert {"build.engine", "surgery.apply", "quantize.calibrate", "quantize.sensitivity",
            "validate.outputs", "graph.tensor_stats", "trace.profile"} <= set(readers)  # fmt: skip
    for job in readers:
        cls = request_class(job)
        field = "model" if "model" in cls.FILES else "path"
        params = {field: str(model)}
        with pytest.raises(UserError) as refused:
            cls.from_params(params)
        assert "outside the model's folder" in refused.value.message, job
    with pytest.raises(UserError):  # the remote send reads nothing outside either
        companions(model)
    # the CLI, end to end: TensorRT-RTX's parser (it reads the file itself), surgery, calibrate
    out = tmp_path / "out"
    out.mkdir()
    runs = [
        ["build", str(model), "--build", "--target-cc", "sm89", "--engine", str(out / "m.plan")],
        ["surgery", str(model), "--fold", "--out", str(out / "edited.onnx")],
        ["calibrate", str(model), "--data", str(tmp_path / "model"), "--out", str(out / "q.onnx")],
        ["validate", str(model)],
    ]
    for args in runs:
        run = _cli(*args)
        assert run.returncode == 1 and "outside the model's folder" in run.stderr, (args, run)
        assert "Traceback" not in run.stderr
    _no_marker_under(out)
    assert not list(out.iterdir())


def test_external_data_inside_the_folder_still_reads(tmp_path: Path) -> None:
    model = _external_model(tmp_path / "model", "inside")
    check_model_file(model)
    assert [p.name for p in companions(model)] == ["model.onnx", "weights.bin"]
    run = _cli("surgery", str(model), "--fold", "--out", str(tmp_path / "edited.onnx"))
    assert run.returncode == 0, run.stderr


# -- plugin libraries need consent ---------------------------------------------------------------
def test_a_plugin_library_named_in_settings_loads_only_with_consent(tmp_path: Path) -> None:
    marker = tmp_path / "plugin-ran.marker"
    library = _library(tmp_path, marker)
    if library is None:
        pytest.fail("gcc is needed to build the plugin library")
    settings = tmp_path / "settings.toml"
    settings.write_text(f"[build]\nplugins = [{str(library)!r}]\n".replace("'", '"'))
    model = MODEL
    args = ["build", str(model), "--settings", str(settings), "--build", "--target-cc", "sm89",
            "--engine", str(tmp_path / "m.plan")]  # fmt: skip
    run = _cli(*args)
    assert run.returncode == 1 and "only with your consent" in run.stderr, run.stderr
    assert str(library) in run.stderr and not marker.exists()
    with pytest.raises(UserError, match="only with your consent"):
        require_library_consent(str(library))
    for bad, said in (("", "empty"), (str(tmp_path), "folder"), (str(settings), "not a shared")):
        with pytest.raises(UserError, match=said):
            require_library_consent(bad)
    empty = tmp_path / "empty.toml"
    empty.write_text('[build]\nplugins = [""]\n')
    run = _cli("build", str(model), "--settings", str(empty), "--print-trtexec")
    assert run.returncode == 1 and "empty entry" in run.stderr
    assert "--staticPlugins=" not in run.stdout
    grant_consent(library)  # this test's own config folder (conftest isolates it)
    assert require_library_consent(str(library)) == library


# -- outputs never write through a symlink -------------------------------------------------------
def test_surgery_out_through_a_symlink_replaces_the_link_not_its_target(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / "precious.onnx"
    precious.write_bytes(b"keep me")
    out = tmp_path / "out"
    out.mkdir()
    link = out / "edited.onnx"
    link.symlink_to(precious)
    run = _cli("surgery", str(MODEL), "--fold", "--out", str(link), "--json")
    assert run.returncode in (0, 1), run.stderr
    assert precious.read_bytes() == b"keep me"
    assert not link.is_symlink() and onnx.load(link).graph.node
    assert (out / "edited.steps.toml").is_file()  # beside the asked path
    assert not (elsewhere / "precious.steps.toml").exists()


def test_the_guard_parses_only_a_model_that_names_external_data(tmp_path: Path) -> None:
    """The guard stands in front of every job that reads a model; a model with its weights
    inside needs no parse, so a job that never parses one (a TensorRT build hands the file to
    the parser) no longer imports onnx for it (0.35 s CPU of the build's fixed cost). A model
    that names external data is still parsed and checked."""
    inside = tmp_path / "inside.onnx"
    onnx.save(chain_model(2), inside)  # its one weight inside the file
    code = (
        "import sys; from deploylens.core.guard import check_model_file; "
        f"check_model_file({str(inside)!r}); print('onnx' in sys.modules)"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0 and found.stdout.strip() == "False", found.stderr[-500:]
    outside = tmp_path / "outside.onnx"
    weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="../../etc/passwd")
    weight.ClearField("raw_data")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[weight],
    )  # fmt: skip
    outside.write_bytes(helper.make_model(graph).SerializeToString())
    with pytest.raises(UserError, match="own folder"):
        check_model_file(outside)


def _command_line(tmp_path: Path, command: str, options: list[str]) -> list[str]:
    """``command`` on a 2-node model the test writes, ``{tmp}`` in options made the folder
    (which also holds ``data.npz``, calibration data for the model)."""
    model = tmp_path / "m.onnx"
    onnx.save(chain_model(2), model)
    np.savez(tmp_path / "data.npz", x=np.ones((4, 8), np.float32))
    return [command, str(model), *(option.replace("{tmp}", str(tmp_path)) for option in options)]


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("build", ["--build", "--target-cc", "sm89"]),
        ("validate", []),
        ("support", ["--target", "trt-rtx"]),
        ("surgery", ["--fold", "--out", "{tmp}/edited.onnx"]),
        ("calibrate", ["--data", "{tmp}/data.npz"]),
    ],
)
def test_a_command_hands_its_job_to_the_worker_without_importing_onnx(
    tmp_path: Path, command: str, options: list[str]
) -> None:
    """The worker reads the model; the CLI process imported onnx before it handed over (0.2 s
    CPU of each command's fixed cost: ``build`` for settings checks only a build without
    ``--build`` prints, ``validate`` through its result's module, ``support`` with only the
    live parser asked by reading the model itself first, ``surgery`` for the pattern names its
    ``--pattern`` choices came from, ``calibrate`` through the sensitivity report's module).
    The hand-over (``run_job``)
    is replaced here by a recorder; the jobs themselves are tested with real workers."""
    argv = _command_line(tmp_path, command, options)
    code = (
        "import os, sys\nimport deploylens.core.jobs as jobs\n"
        "def handed(job, params, *rest, **named):\n"
        "    print(job, 'onnx' in sys.modules, flush=True)\n"
        "    os._exit(0)\n"
        "jobs.run_job = handed\n"
        f"from deploylens.core.cli import main\nmain({argv!r})\n"
        "print('no job handed over')"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-800:]
    job, imported = found.stdout.split()
    assert job.startswith(("build.", "validate.", "support.", "surgery.", "quantize."))
    assert imported == "False", found.stdout


@pytest.mark.parametrize(
    ("command", "options", "headline"),
    [
        ("validate", [], "PASS"),
        ("calibrate", ["--data", "{tmp}/data.npz", "--out", "{tmp}/q.onnx"], "entropy:"),
    ],
)
def test_a_command_prints_its_result_without_importing_numpy_or_onnx(
    tmp_path: Path, command: str, options: list[str], headline: str
) -> None:
    """The whole command, its worker real: the CLI process decodes and prints the result
    without NumPy (validate's records and calibrate's accuracy lived beside the NumPy code that
    fills them: 0.2 s of CPU in the CLI process) and without onnx."""
    argv = _command_line(tmp_path, command, options)
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('imported', 'numpy' in sys.modules, 'onnx' in sys.modules,"
        " file=sys.stderr))\n"
        f"from deploylens.core.cli import main\nmain({argv!r})\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert found.returncode == 0, found.stdout + found.stderr[-800:]
    assert found.stdout.startswith(headline), found.stdout
    assert "imported False False" in found.stderr, found.stderr[-800:]
