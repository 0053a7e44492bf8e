"""Files DeployLens writes and reads back, read back guarded (issue 44): a cache, a sidecar or
a project someone truncated, edited or replaced by something that is not a file is "not cached"
or a sentence naming the key — never a traceback, a hang or a wrong answer. Every file is made
by the test."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from deploylens.core.errors import UserError
from deploylens.core.own_files import Either, Range, Table, check, parse_own_json


@pytest.mark.parametrize(
    "text",
    ['{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}', '{"a": ' + "9" * 30 + "}",
     "[" * 100_000 + "]" * 100_000, "", "{", '{"a": 1} trailing'],
)  # fmt: skip
def test_numbers_a_writer_of_ours_never_writes_are_refused(text: str) -> None:
    with pytest.raises(UserError, match=r"f\.json is not a readable cache"):
        parse_own_json(text, "f.json", "cache")


def test_a_schema_names_where_a_value_is_wrong() -> None:
    schema = {"versions": Table(str, str), "opsets": [Range(1, 1000)], "x": Either(None, str)}
    check({"versions": {"a": "1"}, "opsets": [17], "x": None}, schema, "f")
    for bad, where in (({"versions": {}, "opsets": [0], "x": None}, "f.opsets[0]"),
                       ({"versions": {}, "opsets": [True], "x": None}, "f.opsets[0]"),
                       ({"versions": [], "opsets": [], "x": None}, "f.versions"),
                       ({"versions": {}, "opsets": []}, "has no 'x'")):  # fmt: skip
        with pytest.raises(UserError, match=re.escape(where)):
            check(bad, schema, "f")


def test_a_sidecar_span_that_no_capture_writes_never_reaches_the_diagnosis(
    tmp_path: Path,
) -> None:
    """``unprofiled_gpu_span_ms`` = NaN / Infinity / 1e308 reached ``int(ms * 1e6)``."""
    from deploylens.core.trace.capture_sidecar import read_sidecar

    trace = tmp_path / "t.json"
    for token in ("NaN", "Infinity", "1e308", "-5", "0", '"46"'):
        (tmp_path / "t.capture.json").write_text(
            '{"mode": "eager", "unprofiled_gpu_span_ms": ' + token + "}"
        )
        found = read_sidecar(trace)
        assert found is None or "unprofiled_gpu_span_ms" not in found, token
    (tmp_path / "t.capture.json").write_text('{"mode": "eager", "unprofiled_gpu_span_ms": 46.9}')
    assert read_sidecar(trace) == {"mode": "eager", "unprofiled_gpu_span_ms": 46.9}


def test_a_folder_where_the_registry_cache_goes_leaves_support_working(tmp_path: Path) -> None:
    """A folder (or FIFO) at ``support-<hash>.json`` failed every later ``support`` until the
    user deleted it; then the registries went to the job's own folder, which vanished with the
    job (the CLI named a path that "does not exist"). Now the folder is replaced by the cache."""
    from deploylens.core.jobs import Worker
    from deploylens.core.support.collect import cache_path, read_registries
    from deploylens.core.support.request import CollectRequest

    cache = tmp_path / "cache"
    cache.mkdir()
    os.environ["DEPLOYLENS_CACHE_DIR"] = str(cache)
    try:
        cache_path().mkdir()  # the place the cache file goes, taken by a folder
        with Worker() as worker:
            answer = worker.run_request(CollectRequest())
            assert not answer.cached and Path(answer.path) == cache_path()
            assert cache_path().is_file() and read_registries(answer.path)["spec"]["ops"]
            assert worker.run_request(CollectRequest()).cached  # read back from where it belongs
            cache_path().write_text('{"versions": {}, "spec": {"ops": [{"name": NaN}]}}')
            again = worker.run_request(CollectRequest())  # an edited one: collected again
            assert not again.cached and read_registries(again.path)["versions"]
            assert worker.run_request(CollectRequest()).cached  # and now read back
    finally:
        os.environ.pop("DEPLOYLENS_CACHE_DIR", None)


def test_a_measured_cache_without_a_librarys_answers_is_measured_again(tmp_path: Path) -> None:
    """With its ``trt`` key removed the cache said "TensorRT-RTX (not installed)" with exit 0
    while it is installed: it is not this cache, so it is measured again."""
    pytest.importorskip("tensorrt_rtx")
    from deploylens.core.support import measure

    patch = pytest.MonkeyPatch()
    patch.setenv("DEPLOYLENS_CACHE_DIR", str(tmp_path))
    patch.setattr(measure, "QUICK_OPS", ("Relu",))
    try:
        first = measure.load_measured(quick=True)
        path = measure.cache_path(True)
        data = json.loads(path.read_text())
        del data["trt"]
        path.write_text(json.dumps(data))
        again = measure.load_measured(quick=True)
        assert not again.cached and again.trt.product == "TensorRT-RTX"
        assert again.trt.cells == first.trt.cells
    finally:
        patch.undo()


_WITHOUT = """
import importlib.abc, sys

class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "onnxruntime"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
"""


def test_registries_collected_without_torch_and_ort_read_back(tmp_path: Path) -> None:
    """The installed bundle has no torch: it collected {"available": false, "reason": ...} for
    both exporters and then refused its own cache ("has no 'torch'"), so `support` failed in
    the package smoke test. Collected with torch and ONNX Runtime unimportable, the cache reads
    back through the same guarded reader, and support answers from it."""
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_WITHOUT)
    script = (
        "import json, sys\n"
        "from deploylens.core.support.collect import collect, read_registries\n"
        "from deploylens.core.support.matrix import SupportMatrix\n"
        "data = collect(lambda *a: None)\n"
        "assert not data['torchscript']['available'] and not data['ort']['available'], data\n"
        "path = sys.argv[1]\n"
        "open(path, 'w').write(json.dumps(data))\n"
        "back = read_registries(path)\n"
        "SupportMatrix(back)\n"
        "print('read back', back['dynamo']['reason'][:40])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "cache.json")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read back torch is not importable here" in done.stdout
