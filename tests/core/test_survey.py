"""``deploylens survey``: each model through the single commands' own jobs, a row each — a
model that crashes its worker is a row with the cause and the survey goes on, a killed survey
resumes without recomputing the rows it finished, patterns expand from the registries, and the
table, CSV, JSON and HTML say the same. Every model is built by the test or bundled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.core.test_cli import DEPLOYLENS

CRASHER = """
import os
import torch


class Crash(torch.nn.Module):
    def forward(self, x):
        os.abort()  # native death inside the export's worker


def make():
    return Crash(), (torch.zeros(1, 4),)
"""


def run(*argv: str, cache: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEPLOYLENS_CACHE_DIR": str(cache)}
    return subprocess.run([DEPLOYLENS, "survey", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


def test_a_model_that_crashes_its_worker_is_a_row_and_the_survey_goes_on(
    tmp_path: Path, samples: Path
) -> None:
    crasher = tmp_path / "crash.py"
    crasher.write_text(CRASHER)
    done = run(f"{crasher}:make", str(samples / "small_cnn.dynamo.onnx"), "--trust",
               "--out", str(tmp_path / "out"), "--json", "--no-build", "--input", "x:1x4",
               cache=tmp_path / "cache")  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]  # argparse: survey takes no --input
    done = run(f"{crasher}:make", str(samples / "small_cnn.dynamo.onnx"), "--trust",
               "--out", str(tmp_path / "out"), "--json", "--no-build",
               cache=tmp_path / "cache")  # fmt: skip
    rows = json.loads(done.stdout)["rows"]
    assert [row["spec"] for row in rows] == [
        f"{crasher}:make",
        str(samples / "small_cnn.dynamo.onnx"),
    ]
    crashed, fine = rows
    assert crashed["verdict"]["exit_code"] == 1 and crashed["cells"][0]["step"] == "export"
    assert crashed["cells"][0]["word"].startswith("crashed: The worker crashed in native code")
    assert all(c["severity"] == "skipped" for c in crashed["cells"][1:])
    assert fine["verdict"]["word"] == "PASS" and fine["verdict"]["evidence"]["count"] == 2
    assert done.returncode == 1  # one model did not pass: the survey's status says so


def test_a_killed_survey_resumes_without_recomputing_finished_rows(
    tmp_path: Path, samples: Path
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out"
    models = [str(samples / name) for name in ("small_cnn.dynamo.onnx", "small_cnn.batched.onnx",
                                                "deform_conv.dynamo19.onnx")]  # fmt: skip
    env = {**os.environ, "DEPLOYLENS_CACHE_DIR": str(cache)}
    survey = subprocess.Popen([DEPLOYLENS, "survey", *models, "--out", str(out), "--no-build"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)  # fmt: skip
    rows = cache / "survey"
    try:
        deadline = time.monotonic() + 300
        while not (rows.is_dir() and list(rows.glob("*.json"))) and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(survey.pid, signal.SIGKILL)  # the survey and its worker, mid-run
    finally:
        survey.wait(timeout=60)
    finished = {p.name: p.stat().st_mtime_ns for p in rows.glob("*.json")}
    assert 1 <= len(finished) < 3
    assert not list(rows.glob(".*.tmp"))  # a killed job leaves nothing half-written
    done = run(*models, "--out", str(out), "--no-build", "--json", cache=cache)
    report = json.loads(done.stdout)
    assert len(report["rows"]) == 3
    again = {p.name: p.stat().st_mtime_ns for p in rows.glob("*.json")}
    assert len(again) == 3
    assert all(again[name] == stamp for name, stamp in finished.items())  # not recomputed


def test_patterns_expand_from_the_registries(tmp_path: Path) -> None:
    listed = tmp_path / "list.txt"
    listed.write_text("# a shortlist\ntorchvision:detection/ssd*\n\ntimm:convnext_at*\n")
    done = run("torchvision:resnet1*", "--from", str(listed), "--list", cache=tmp_path / "c")
    specs = done.stdout.split()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torchvision:resnet18" in specs and "torchvision:ssd300_vgg16" in specs
    assert "timm:convnext_atto" in specs and len(specs) == len(set(specs))
    bad = run("torchvision:nofamily/*", "--list", cache=tmp_path / "c")
    assert bad.returncode == 1 and "no family 'nofamily'" in bad.stderr


def test_every_format_says_the_same(tmp_path: Path, samples: Path) -> None:
    from deploylens.core.survey.report import as_csv, as_html, as_json, table
    from deploylens.core.survey.rows import StepCell, SurveyRow

    rows = [
        SurveyRow("a.onnx", "k1", [StepCell("validate", "PASS", "pass", 0, 2, 1.5),
                                   StepCell("build sm89", "no plan", "fail", 1, 0, 0.2)]),
        SurveyRow("<b>.onnx", "k2", [StepCell("validate", "INCONCLUSIVE: zeros", "warn", 3)]),
    ]  # fmt: skip
    assert [r.verdict().exit_code for r in rows] == [1, 3]
    assert "FAIL at build sm89" in json.loads(as_json(rows))["rows"][0]["verdict"]["word"]
    assert as_csv(rows).splitlines()[1].startswith("a.onnx,FAIL at build sm89: no plan,1")
    page = as_html(rows)
    assert "&lt;b&gt;.onnx" in page and "<script" not in page
    assert "✗ no plan" in table(rows)


def test_a_build_is_profiled_from_the_validated_shapes(tmp_path: Path) -> None:
    """A model with dynamic sequence axes built for one token unless given a range: the survey
    hands the build 1 … the validated shape … twice it (BERT and BART were refused before)."""
    from onnx import TensorProto, helper

    from deploylens.core.survey.run import profile_args

    graph = helper.make_graph(
        [helper.make_node("Identity", ["ids"], ["y"])], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("fixed", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", "sequence"])],
    )  # fmt: skip
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, ir_version=9).SerializeToString())
    said = profile_args(str(path), {"ids": [1, 16], "fixed": [1, 4]})
    assert said == ["--profile", "ids:1x1/1x16/2x32"]
    assert profile_args(str(path), {}) == []


def test_the_cache_key_never_reads_outside_a_models_folder(tmp_path: Path) -> None:
    """The key hashes a folder's own files; a link in it to a file outside is not read (the
    hf: reader refuses it, and the key must not read it first)."""
    from deploylens.core.survey.run import SurveyOptions, row_key

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"a")
    (folder / "model.safetensors").symlink_to(outside)
    options = SurveyOptions(out=str(tmp_path / "o"))
    before = row_key(f"hf:{folder}", options)
    outside.write_bytes(b"b")  # what the link points at changed: the key did not read it
    assert row_key(f"hf:{folder}", options) == before
    (folder / "config.json").write_text('{"a": 1}')
    assert row_key(f"hf:{folder}", options) != before
