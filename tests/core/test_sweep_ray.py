"""Sweeps on Ray, for real: Ray started by the sweep on this machine (the default where Ray is
installed), and a local two-node cluster the test starts (``ray start --head`` and a second
node joining it; Ray binds this machine's own address, so nothing leaves it). A point whose Ray
worker dies is retried once and reported; one that dies twice is reported failed and the other
points stand. The fault is injected through ``DEPLOYLENS_FAULT_POINT`` (a test-only hook in
``core/cluster.py``: the task's process exits, as after a segfault or the OOM killer).

Where Ray is not installed these tests skip, except under ``DEPLOYLENS_REQUIRE_RAY=1`` (make
test sets it: CI installs ``.[cluster]``), where that is a failure."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deploylens.core.cluster import FAULT_ENV

DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))
RAY = str(Path(sys.executable).with_name("ray"))
HAVE_RAY = importlib.util.find_spec("ray") is not None
if not HAVE_RAY and os.environ.get("DEPLOYLENS_REQUIRE_RAY") == "1":
    raise RuntimeError("Ray is not installed but DEPLOYLENS_REQUIRE_RAY=1 (pip install .[cluster])")
pytestmark = pytest.mark.skipif(not HAVE_RAY, reason="Ray not installed (.[cluster])")

BATCHES = "1,2,3,4,5,6,7,8"  # eight points: batch 1..8, serial, one stream (CPU)


def dynamic_mlp(folder: Path, width: int = 256, layers: int = 1) -> Path:
    """An MLP with a dynamic batch axis, written by the test (any batch runs): ``layers``
    MatMul+Relu of ``width``, then a MatMul to 10 outputs."""
    rng = np.random.default_rng(0)
    weights, nodes, last = [], [], "x"
    for i in range(layers):
        matrix = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        weights.append(numpy_helper.from_array(matrix, f"w{i}"))
        nodes += [helper.make_node("MatMul", [last, f"w{i}"], [f"h{i}"]),
                  helper.make_node("Relu", [f"h{i}"], [f"r{i}"])]  # fmt: skip
        last = f"r{i}"
    head = rng.standard_normal((width, 10)).astype(np.float32)
    weights.append(numpy_helper.from_array(head, "head"))
    nodes.append(helper.make_node("MatMul", [last, "head"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what the installed ONNX Runtime reads
    path = folder / f"mlp{width}x{layers}.onnx"
    onnx.save(model, path)
    return path


def sweep(
    model: Path,
    out: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    status: int = 0,
    iterations: int = 3,
) -> dict:
    """The sweep's JSON report; ``status``: the exit status expected (1: a point failed)."""
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(model), "--backend", "ort", "--batch", BATCHES,
         "--iterations", str(iterations), "--warmup", "1", "--out", str(out), "--json", *extra],
        capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert run.returncode == status, run.stderr[-3000:]
    return json.loads(run.stdout)


RAY_DID_NOT_START = ("Ray did not start within", "Ray could not start", "timed out during startup")


def ray_or_its_fallback(
    model: Path, out: Path, *extra: str, env: dict[str, str], iterations: int
) -> dict | None:
    """A sweep that asks for Ray: its report, or — where Ray cannot start in time (a machine as
    busy as a shared CI runner: "The current node timed out during startup") — None, after
    checking the product's own answer to that: --executor ray fails with the cause, none of
    Ray's processes is left, and auto runs every point in the worker saying why."""
    root = _ray_root()
    mine = {**env, "RAY_TMPDIR": root}
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(model), "--backend", "ort", "--batch", BATCHES,
         "--iterations", str(iterations), "--warmup", "1", "--out", str(out), "--json", *extra],
        capture_output=True, text=True, timeout=600, env={**os.environ, **mine},
    )  # fmt: skip
    try:
        if run.returncode == 0:
            return dict(json.loads(run.stdout))
        assert any(words in run.stderr for words in RAY_DID_NOT_START), run.stderr[-3000:]
        assert "Traceback" not in run.stderr
        assert not _ray_processes(root)
        fallback = sweep(model, out.with_name(out.name + "-auto"), env={**mine,
                         "DEPLOYLENS_RAY_PAYS_OFF_S": "0"}, iterations=2)  # fmt: skip
        assert fallback["ran"] == 8
        if fallback["executor"] == "worker":
            assert any(w in fallback["ray_unavailable"] for w in RAY_DID_NOT_START), fallback
        assert not _ray_processes(root)
        return None
    finally:
        _stop_ray_processes(root)
        shutil.rmtree(root, ignore_errors=True)


def _stop_ray_processes(root: str) -> None:
    """Whatever a test's Ray left (its temp root in the command line): killed, even when the
    test failed."""
    subprocess.run(["pkill", "-9", "-f", root], capture_output=True)


def by_label(report: dict) -> dict[str, dict]:
    return {f"b{p['batch']} s{p['streams']} {p['mode']}": p for p in report["points"]}


def test_an_embedded_ray_sweep_matches_the_worker_and_runs_the_cheap_points_while_ray_starts(
    tmp_path: Path,
) -> None:
    """Ray started by the sweep: every point ok with a real trace in the folder, the same
    verdicts as in the worker; while Ray starts, the cheapest points run in the worker (their
    node says so). The biggest point's first try is killed: where it ran on Ray (it goes
    there first) it was retried once."""
    # points from ~0.2 s (batch 1) to ~3 s (batch 8) on one core, ~15 s in all: a few run here
    # while Ray starts (2-5 s; measured 4-5 s here with 200 iterations, when 4 of 8 points ran
    # here and the rest took 8 s on one core: too close), the biggest go to Ray
    model = dynamic_mlp(tmp_path, width=256, layers=2)
    once = f"b8 s1 serial:once:{tmp_path}"
    report = ray_or_its_fallback(model, tmp_path / "ray", "--executor", "ray",
                                 env={FAULT_ENV: once}, iterations=50)  # fmt: skip
    if report is None:
        return  # Ray could not start on this busy machine: the fallback was checked instead
    assert report["executor"] == "ray" and report["cluster"]["started_here"]
    points = by_label(report)
    assert len(points) == 8 and report["ran"] == 8 and report["failed"] == 0
    here = [p["batch"] for p in points.values() if p["node"].startswith("this worker")]
    # the cheapest first, in order, and never more than half: however long Ray takes to start
    # on a busy machine, the biggest points are Ray's
    assert here == list(range(1, len(here) + 1)) and len(here) <= 4
    on_ray = [label for label, p in points.items() if not p["node"].startswith("this worker")]
    retried = [label for label, p in points.items() if p["attempts"] == 2]
    assert "b8 s1 serial" in on_ray and retried == ["b8 s1 serial"], (on_ray, retried)
    for label in retried:
        assert "retried once" in points[label]["reason"] and "died" in points[label]["reason"]
    for point in points.values():  # every trace came back to the folder and is a real capture
        trace = Path(point["trace"])
        assert trace.parent == tmp_path / "ray" and trace.is_file()
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        assert sum(1 for e in events if e.get("ph") == "X") >= 3
    saved = json.loads((tmp_path / "ray" / "sweep.json").read_text())
    assert [p["status"] for p in saved["points"]] == ["ok"] * 8
    assert not list((tmp_path / "ray").glob(".deploylens-sweep-*"))  # its marker went
    # the same sweep in the worker: the same points, the same verdicts
    worker = sweep(model, tmp_path / "worker", "--executor", "worker", iterations=50)
    assert worker["executor"] == "worker" and worker["cluster"] is None
    assert {k: p["status"] for k, p in by_label(worker).items()} == {
        k: p["status"] for k, p in points.items()
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``ray start --head`` and one worker node joining it, one CPU each; stopped after."""
    temp = Path("/tmp") / f"ray-{uuid.uuid4().hex[:8]}"  # Ray's socket paths must stay short
    port = _free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    head = [RAY, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
            "--include-dashboard=false", "--temp-dir", str(temp), *common]  # fmt: skip
    try:  # every process it started is stopped, even when `ray start` fails or times out
        started = subprocess.run(head, capture_output=True, text=True, timeout=180, env=env)
        if started.returncode != 0 and "timed out" in started.stderr:
            pytest.skip(f"ray start --head timed out on this busy machine: {started.stderr[-300:]}")
        assert started.returncode == 0, started.stderr[-2000:]
        join = [RAY, "start", "--address", f"127.0.0.1:{port}", *common]
        joined = subprocess.run(join, capture_output=True, text=True, timeout=180, env=env)
        assert joined.returncode == 0, joined.stderr[-2000:]
        yield f"127.0.0.1:{port}"
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120, env=env)
        _stop_ray_processes(str(temp))  # gcs_server, raylet, monitors: their command lines
        _stop_ray_processes(f"--gcs-address=127.0.0.1:{port}")  # name the temp dir or port
        _stop_ray_processes(f"--port={port}")
        shutil.rmtree(temp, ignore_errors=True)


def test_a_sweep_on_a_two_node_cluster_retries_a_dead_point_and_reports_one_that_dies_twice(
    ray_cluster: str, tmp_path: Path
) -> None:
    """On a cluster every point is a Ray task: b3's worker dies on its first try (retried,
    then ok), b5's on every try (failed after two, the other seven stand), on both nodes."""
    model = dynamic_mlp(tmp_path)
    faults = f"b3 s1 serial:once:{tmp_path},b5 s1 serial:always"
    env = {"RAY_AUTH_MODE": "token", FAULT_ENV: faults}
    report = sweep(model, tmp_path / "out", "--ray-address", ray_cluster, env=env, status=1)
    assert report["executor"] == "ray" and not report["cluster"]["started_here"]
    assert report["cluster"]["nodes"] == 2 and report["cluster"]["cpus"] == 2
    points = by_label(report)
    failed = points["b5 s1 serial"]
    assert failed["status"] == "failed" and failed["attempts"] == 2
    assert "failed twice" in failed["reason"] and "died" in failed["reason"]
    retried = points["b3 s1 serial"]
    assert retried["status"] == "ok" and retried["attempts"] == 2
    assert "retried once" in retried["reason"] and "died" in retried["reason"]
    others = [p for label, p in points.items() if label != "b5 s1 serial"]
    assert len(others) == 7 and all(p["status"] == "ok" for p in others)
    assert all(p["attempts"] == 1 for label, p in points.items() if label[:2] not in ("b3", "b5"))
    assert len({p["node"] for p in others}) == 2  # both nodes ran points (Placer)
    assert report["ran"] == 7 and report["failed"] == 1 and report["retried"] == 2
    csv = (tmp_path / "out" / "sweep.csv").read_text().splitlines()
    assert len(csv) == 9 and "attempts" in csv[0]
    # Ray of the sweep's own never joins the cluster RAY_ADDRESS names (ray.init() would)
    own = sweep(model, tmp_path / "own", "--executor", "ray", "--batch", "1,2",
                env={"RAY_AUTH_MODE": "token", "RAY_ADDRESS": ray_cluster})  # fmt: skip
    assert own["cluster"]["started_here"] and own["cluster"]["nodes"] == 1
    assert own["ran"] == 2 and own["failed"] == 0


def test_asking_for_ray_without_it_says_how_to_get_it(tmp_path: Path) -> None:
    """The worker's interpreter has no Ray (a blocker on its import path): auto runs the sweep
    in the worker, --executor ray is a clear error naming the extra."""
    blocker = tmp_path / "no_ray"
    (blocker / "ray").mkdir(parents=True)
    (blocker / "ray" / "__init__.py").write_text("raise ModuleNotFoundError('no ray here')\n")
    hide = {"PYTHONPATH": str(blocker)}
    model = dynamic_mlp(tmp_path)
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(model), "--backend", "ort", "--batch", "1", "--iterations",
         "2", "--warmup", "1", "--out", str(tmp_path / "o"), "--executor", "ray"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **hide},
    )  # fmt: skip
    assert run.returncode == 1 and "deploylens[cluster]" in run.stderr, run.stderr[-2000:]
    auto = sweep(model, tmp_path / "auto", env=hide)
    assert auto["executor"] == "worker" and auto["ran"] == 8


def test_a_point_run_on_another_machine_sends_back_every_file_it_made(tmp_path: Path) -> None:
    """On a node that is not the sweep's machine the files come back as bytes: the trace and
    its capture sidecar, nothing left in the node's scratch folder."""
    from dataclasses import asdict

    from deploylens.core.trace.request import ProfileRequest
    from deploylens.core.trace.result import SweepPoint
    from deploylens.core.trace.sweep import point_on_node

    model = dynamic_mlp(tmp_path)
    base = ProfileRequest(str(model), "", backend="ort", warmup=1, iterations=2).to_params()
    point = asdict(SweepPoint("serial", 1, 4))
    # another machine, even one with this host name: the sweep's marker is not in its folder
    away = point_on_node(base, point, None, 1, str(tmp_path), ".deploylens-sweep-elsewhere")
    assert away["point"]["status"] == "ok" and not list(tmp_path.glob("point-*"))
    trace = Path(away["point"]["trace"]).name
    assert set(away["files"]) == {trace, trace.replace(".json", ".capture.json")}
    assert json.loads(away["files"][trace])  # the capture itself, as bytes
    (tmp_path / ".deploylens-sweep-here").touch()
    here = point_on_node(base, point, None, 1, str(tmp_path), ".deploylens-sweep-here")
    assert here["files"] == {} and (tmp_path / trace).is_file()


def test_gpu_points_on_a_ray_without_gpus_are_skipped_with_the_reason_not_left_waiting(
    tmp_path: Path,
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: Ray would have one to give")
    run = subprocess.run(
        [DEPLOYLENS, "sweep", "sample:small_cnn", "--backend", "torch", "--device", "cuda",
         "--batch", "1,2", "--iterations", "2", "--warmup", "1", "--out", str(tmp_path / "o"),
         "--executor", "ray", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 3, run.stderr[-2000:]  # nothing was measured: INCONCLUSIVE
    report = json.loads(run.stdout)
    assert report["executor"] == "ray" and report["cluster"]["gpus"] == 0
    assert report["skipped"] == 2 and report["ran"] == 0
    assert all("Ray cluster has none" in p["reason"] for p in report["points"])


def _ray_root() -> str:
    """A Ray temp root of this test's own (short: Ray's socket paths are limited), so the
    processes a sweep leaves can be told from another test's Ray on the other xdist worker."""
    return f"/tmp/rt-{uuid.uuid4().hex[:8]}"


def _ray_processes(root: str) -> list[str]:
    found = subprocess.run(["pgrep", "-a", "-f", root], capture_output=True,
                           text=True).stdout.splitlines()  # fmt: skip
    return [line for line in found if "defunct" not in line and "pgrep" not in line]


def test_auto_keeps_a_small_sweep_in_the_worker_and_says_why(tmp_path: Path) -> None:
    """The README's kind of sweep: a few quick CPU points. Ray would cost more to start than
    the points take, so auto runs them in the worker (and the report says so)."""
    report = sweep(dynamic_mlp(tmp_path), tmp_path / "auto", iterations=3)
    assert report["executor"] == "worker" and report["ran"] == 8
    assert "less than Ray's start repays" in report["executor_reason"]


def test_ray_started_here_listens_on_loopback_only_with_token_auth(tmp_path: Path) -> None:
    """Every socket of the Ray a sweep starts, listed independently (``ss``), is a loopback
    one; its GCS runs in token mode; nothing of it is left after the stop."""
    script = tmp_path / "start.py"
    script.write_text(
        "import json, os, subprocess\n"
        "from deploylens.core import ray_start as cluster\n"
        "starting = cluster.Starting()\n"
        "starting.result()\n"
        "pids = cluster.ray_pids()\n"
        "listening = subprocess.run(['ss', '-ltnpH'], capture_output=True, text=True).stdout\n"
        "mine = [l for l in listening.splitlines() if any(f'pid={p},' in l for p in pids)]\n"
        "gcs = [p for p in pids if b'gcs_server' in open(f'/proc/{p}/cmdline', 'rb').read()]\n"
        "env = open(f'/proc/{gcs[0]}/environ', 'rb').read().split(b'\\0')\n"
        "starting.stop()\n"
        "print(json.dumps({'pids': pids, 'sockets': mine,\n"
        "                  'token': b'RAY_AUTH_MODE=token' in env}))\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["token"] and len(found["sockets"]) >= 3
    addresses = [line.split()[3] for line in found["sockets"]]
    assert all(a.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")) for a in addresses), (
        addresses
    )
    assert not [pid for pid in found["pids"] if Path(f"/proc/{pid}").exists()
                and b"defunct" not in Path(f"/proc/{pid}/stat").read_bytes()]  # fmt: skip


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("ray://127.0.0.1:10001", "not a ray:// URL (Ray Client is not supported)"),
        ("http://127.0.0.1:8265", "not a http:// URL"),
        ("no-port-here", "is not HOST:PORT"),
        ("127.0.0.1:99999", "is not HOST:PORT"),
        ("127.0.0.1:1", "did not answer"),
    ],
)
def test_a_ray_address_that_cannot_work_is_a_sentence_at_once(
    address: str, said: str, tmp_path: Path
) -> None:
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(dynamic_mlp(tmp_path)), "--backend", "ort", "--batch", "1",
         "--iterations", "2", "--warmup", "1", "--out", str(tmp_path / "o"),
         "--ray-address", address],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1 and said in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "ValueError" not in run.stderr


def test_a_ray_that_does_not_start_in_time_is_stopped_and_auto_falls_back_to_the_worker(
    tmp_path: Path,
) -> None:
    """A start deadline shorter than Ray's start (the variable stands in for a Ray that hangs:
    under an address-space cap its workers once died at start and the sweep waited forever):
    --executor ray says so and fails; auto runs every point in the worker; no Ray process is
    left either way."""
    model = dynamic_mlp(tmp_path)
    root = _ray_root()
    late = {"DEPLOYLENS_RAY_START_DEADLINE_S": "0.5", "DEPLOYLENS_RAY_PAYS_OFF_S": "0",
            "RAY_TMPDIR": root}  # fmt: skip
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(model), "--backend", "ort", "--batch", "1,2", "--iterations",
         "2", "--warmup", "1", "--out", str(tmp_path / "ray"), "--executor", "ray"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **late},
    )  # fmt: skip
    assert run.returncode == 1 and "Ray did not start within" in run.stderr, run.stderr[-2000:]
    assert not _ray_processes(root)
    report = sweep(model, tmp_path / "auto", env=late, iterations=3)
    assert report["executor"] == "worker" and report["ran"] == 8
    assert "Ray did not start within" in report["ray_unavailable"]
    assert not _ray_processes(root)
    shutil.rmtree(root, ignore_errors=True)


def test_under_an_address_space_cap_ray_starts_with_a_bounded_store(tmp_path: Path) -> None:
    """``ulimit -v 8 GB``: Ray's default store (30 % of RAM) could not be mapped and the sweep
    hung until killed; the sweep's Ray maps 1 GiB and runs."""
    model = dynamic_mlp(tmp_path)
    out, root = tmp_path / "o", _ray_root()
    command = (f"ulimit -v 8000000; exec {DEPLOYLENS} sweep {model} --backend ort --batch 1,2 "
               f"--iterations 2 --warmup 1 --out {out} --executor ray --json")  # fmt: skip
    run = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "RAY_TMPDIR": root})  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["executor"] == "ray" and report["ran"] == 2
    assert not _ray_processes(root)
    shutil.rmtree(root, ignore_errors=True)


def test_under_a_cap_ray_cannot_start_in_it_is_said_at_once(tmp_path: Path) -> None:
    """``ulimit -v 2.5 GB``: Ray's core worker aborted the job's process at start, and after
    98 s the sweep ended with "the worker exited unexpectedly". Now: the cause within seconds,
    the worker fallback named; auto runs every point in the worker."""
    import time

    model = dynamic_mlp(tmp_path)
    root = _ray_root()
    base = (f"ulimit -v 2500000; exec {DEPLOYLENS} sweep {model} --backend ort --batch 1,2 "
            "--iterations 2 --warmup 1")  # fmt: skip
    started = time.perf_counter()
    run = subprocess.run(["bash", "-c", f"{base} --out {tmp_path / 'r'} --executor ray"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "RAY_TMPDIR": root})  # fmt: skip
    assert time.perf_counter() - started < 60  # a cause, not a deadline (CI is loaded)
    assert run.returncode == 1 and "Ray cannot start here" in run.stderr, run.stderr[-2000:]
    assert "--executor worker" in run.stderr and "exited unexpectedly" not in run.stderr
    auto = subprocess.run(
        ["bash", "-c", f"{base} --out {tmp_path / 'a'} --executor auto --json"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RAY_TMPDIR": root, "DEPLOYLENS_RAY_PAYS_OFF_S": "0"},
    )  # fmt: skip
    assert auto.returncode == 0, auto.stderr[-2000:]
    report = json.loads(auto.stdout)
    assert report["executor"] == "worker" and report["ran"] == 2
    assert "Ray cannot start here" in report["ray_unavailable"]
    assert not _ray_processes(root)
    shutil.rmtree(root, ignore_errors=True)


def test_a_worker_ray_aborted_is_said_as_ray_not_as_an_unexpected_exit() -> None:
    from deploylens.core.worker.client import _ray_abort

    tail = ("[2026-12-08 01:40:00] core_worker.cc:312: Check failed: plasma mmap failed\n"
            "  /x/site-packages/ray/_raylet.so(+0x9dff16) CoreWorker__cinit__()\n")  # fmt: skip
    assert _ray_abort(tail).startswith("[2026-12-08 01:40:00] core_worker.cc:312: Check failed")
    assert _ray_abort("Traceback: an ordinary crash\n") == ""
