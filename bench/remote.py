"""The remote worker and Ray sweeps, measured side by side in one run.

1. Round trip of a small job (``selftest.echo``): a fresh worker started, one job, closed —
   locally and over SSH to an sshd on a loopback port (tests/helpers/loopback_sshd.py: throwaway
   keys, the code already cached on the "host"); and the same job on a worker already running
   (what the GUI does). Variants alternate; medians.
2. Transfer of a 200 MB model: sent to the host's content cache (cold), sent again (cached:
   one probe), fetched back (atomic copy) — MB/s.
3. A 16-point CPU sweep (batch 1..16, ONNX Runtime): Ray started on this machine, one core
   per point, vs one point after another in the worker (ONNX Runtime's default threads: all
   cores). Target: ≥ 1.6× on 2 cores, for a latency-bound model (150 narrow layers: ONNX
   Runtime's threads do not help it, as for most small-batch sweeps). Also shown, not counted:
   a wide model whose matrix products already use both cores, where fanning out cannot win.

python bench/remote.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
TARGET_SPEEDUP = 1.6
DEPLOYLENS = str(Path(sys.executable).with_name("deploylens"))


def round_trips(host: str, rounds: int) -> dict[str, Any]:
    """Worker start + one small job + close: here, over ssh with the shared connection (the
    default), and over ssh with one connection per command (DEPLOYLENS_SSH_SHARE=0)."""
    from deploylens.core.jobs import Worker
    from deploylens.core.worker.remote import SHARE_ENV

    def cold(variant: str) -> float:
        os.environ[SHARE_ENV] = "0" if variant == "ssh_unshared" else "1"
        began = time.perf_counter()
        worker = Worker(sys.executable, host="" if variant == "local" else host)
        worker.run("selftest.echo", {"value": 1})
        worker.close()
        return time.perf_counter() - began

    cold("ssh")  # the code goes to the host once; every timed start finds it there
    variants = ("local", "ssh", "ssh_unshared")
    times: dict[str, list[float]] = {v: [] for v in variants}
    for index in range(rounds):
        for variant in variants[index % 3 :] + variants[: index % 3]:  # rotate the order
            times[variant].append(cold(variant))
    os.environ.pop(SHARE_ENV, None)
    warm: dict[str, list[float]] = {"local": [], "ssh": []}
    for variant in ("local", "ssh"):
        worker = Worker(sys.executable, host=host if variant == "ssh" else "")
        worker.start()
        for _ in range(rounds * 4):
            began = time.perf_counter()
            worker.run("selftest.echo", {"value": 1})
            warm[variant].append(time.perf_counter() - began)
        worker.close()
    row: dict[str, Any] = {f"cold_{v}_ms": 1000 * statistics.median(times[v]) for v in variants}
    row |= {f"warm_{v}_ms": 1000 * statistics.median(warm[v]) for v in warm}
    row["overhead_cold_ms"] = row["cold_ssh_ms"] - row["cold_local_ms"]
    row["overhead_cold_unshared_ms"] = row["cold_ssh_unshared_ms"] - row["cold_local_ms"]
    row["overhead_warm_ms"] = row["warm_ssh_ms"] - row["warm_local_ms"]
    row["samples"] = {"cold": times, "warm": warm}
    return row


def cli_round_trips(host: str, model: Path, rounds: int) -> dict[str, Any]:
    """What a user waits for: ``deploylens validate MODEL`` here vs ``--host`` (the model sent
    once, then found in the host's cache), shared connection on and off."""
    from deploylens.core.worker.remote import SHARE_ENV

    def once(variant: str) -> float:
        env = {**os.environ, SHARE_ENV: "0" if variant == "ssh_unshared" else "1"}
        where = [] if variant == "local" else ["--host", host, "--remote-python", sys.executable]
        began = time.perf_counter()
        run = subprocess.run([DEPLOYLENS, "validate", str(model), "--json", *where],
                             capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
        if run.returncode != 0:
            raise SystemExit(f"validate ({variant}) failed: {run.stderr[-1500:]}")
        return time.perf_counter() - began

    once("ssh")
    variants = ("local", "ssh", "ssh_unshared")
    times: dict[str, list[float]] = {v: [] for v in variants}
    for index in range(rounds):
        for variant in variants[index % 3 :] + variants[: index % 3]:
            times[variant].append(once(variant))
    row: dict[str, Any] = {f"{v}_ms": 1000 * statistics.median(times[v]) for v in variants}
    row["samples"] = times
    return row


def transfer(host: str, scratch: Path, size_mb: int) -> dict[str, Any]:
    from deploylens.core.worker.remote import Host, run_ssh
    from deploylens.core.worker.transfer import pull, push

    target = Host.parse(host)
    model = scratch / "model.bin"
    with model.open("wb") as handle:
        for _ in range(size_mb):
            handle.write(os.urandom(1 << 20))
    began = time.perf_counter()
    sent = push(target, model)
    cold = time.perf_counter() - began
    began = time.perf_counter()
    again = push(target, model)
    cached = time.perf_counter() - began
    began = time.perf_counter()
    pull(target, sent.remote, scratch / "back.bin")
    back = time.perf_counter() - began
    assert (scratch / "back.bin").stat().st_size == model.stat().st_size and again.sent == 0
    run_ssh(target, f"rm -rf {Path(sent.remote).parent}", b"", 60)
    return {
        "size_mb": size_mb,
        "send_s": cold,
        "send_mb_s": size_mb / cold,
        "cached_send_s": cached,
        "fetch_s": back,
        "fetch_mb_s": size_mb / back,
    }


def mlp(path: Path, layers: int, width: int) -> Path:
    """MatMul+Relu ``layers`` deep and ``width`` wide, with a dynamic batch axis."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights, nodes, last = [], [], "x"
    for i in range(layers):
        matrix = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        weights.append(numpy_helper.from_array(matrix, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        last = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, ["batch", width])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


# (name, layers, width, timed iterations per point, counts toward the target)
CASES = (
    ("deep-narrow 150×64 (latency-bound)", 150, 64, 400, True),
    ("wide 4×1024 (ORT threads use both cores)", 4, 1024, 200, False),
)


def sweep(model: Path, out: Path, executor: str, iterations: int) -> tuple[float, dict[str, Any]]:
    batches = ",".join(str(b) for b in range(1, 17))
    began = time.perf_counter()
    run = subprocess.run(
        [DEPLOYLENS, "sweep", str(model), "--backend", "ort", "--batch", batches,
         "--iterations", str(iterations), "--warmup", "2", "--out", str(out),
         "--executor", executor, "--json"],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if run.returncode != 0:
        raise SystemExit(f"sweep ({executor}) failed: {run.stderr[-2000:]}")
    report = json.loads(run.stdout)
    assert report["ran"] == 16, report
    return seconds, report


def sweeps(scratch: Path, rounds: int) -> list[dict[str, Any]]:
    rows = []
    for name, layers, width, iterations, counts in CASES:
        model = mlp(scratch / f"mlp-{layers}x{width}.onnx", layers, width)
        times: dict[str, list[float]] = {"worker": [], "ray": [], "auto": []}
        start_s: list[float] = []
        chosen: list[str] = []
        for index in range(rounds):
            order = ("worker", "ray", "auto") if index % 2 == 0 else ("auto", "ray", "worker")
            for executor in order:
                folder = scratch / f"sweep-{layers}-{executor}-{index}"
                seconds, report = sweep(model, folder, executor, iterations)
                times[executor].append(seconds)
                if executor == "ray":
                    start_s.append(report["cluster"]["seconds_to_start"])
                if executor == "auto":
                    chosen.append(report["executor"])
        worker, ray = statistics.median(times["worker"]), statistics.median(times["ray"])
        auto = statistics.median(times["auto"])
        rows.append({
            "case": name, "points": 16, "iterations": iterations, "worker_s": worker,
            "ray_s": ray, "auto_s": auto, "auto_chose": chosen,
            "ray_start_s": statistics.median(start_s), "speedup": worker / ray,
            "target": TARGET_SPEEDUP if counts else None,
            "verdict": ("PASS" if worker / ray >= TARGET_SPEEDUP else "FAIL") if counts else "info",
            "cores": os.cpu_count(), "samples": times,
        })  # fmt: skip
    return rows


README_GRID = ["--batch", "1,8,32", "--streams", "1,2,4", "--mode", "serial,pipelined,cudagraph"]
AUTO_LIMIT = 1.10  # the line: auto never more than 10 % slower than the worker


def readme_sweep(scratch: Path, rounds: int) -> dict[str, Any]:
    """The README's sweep on the bundled dynamic-batch sample, auto against the worker: auto
    must keep small sweeps in the worker (Ray's start cost 10× the sweep before)."""
    model = HERE.parent / "resources" / "samples" / "small_cnn.batched.onnx"
    times: dict[str, list[float]] = {"worker": [], "auto": []}
    chosen = []
    for index in range(rounds):
        for executor in ("worker", "auto") if index % 2 == 0 else ("auto", "worker"):
            began = time.perf_counter()
            run = subprocess.run(
                [DEPLOYLENS, "sweep", str(model), *README_GRID, "--out",
                 str(scratch / f"readme-{executor}-{index}"), "--executor", executor, "--json"],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            times[executor].append(time.perf_counter() - began)
            if run.returncode != 0:
                raise SystemExit(f"README sweep ({executor}) failed: {run.stderr[-2000:]}")
            if executor == "auto":
                chosen.append(json.loads(run.stdout)["executor"])
    worker, auto = statistics.median(times["worker"]), statistics.median(times["auto"])
    ratio = auto / worker
    return {"worker_s": worker, "auto_s": auto, "auto_over_worker": ratio, "auto_chose": chosen,
            "limit": AUTO_LIMIT, "verdict": "PASS" if ratio <= AUTO_LIMIT else "FAIL",
            "samples": times}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (CI)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", choices=("ssh", "sweep"), help="one half of the benchmark")
    args = parser.parse_args()
    from deploylens.core.worker.remote import OPTIONS_ENV
    from tests.helpers.loopback_sshd import available, loopback_sshd

    results: dict[str, Any] = {"quick": args.quick}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        if args.only == "sweep":
            pass
        elif available():
            with loopback_sshd() as sshd:
                os.environ[OPTIONS_ENV] = sshd["options"]
                results["round_trip"] = trip = round_trips(sshd["host"], 6 if args.quick else 15)
                sample = HERE.parent / "resources" / "samples" / "small_cnn.dynamo.onnx"
                results["cli"] = cli = cli_round_trips(sshd["host"], sample, 3 if args.quick else 9)
                results["transfer"] = sent = transfer(sshd["host"], scratch, 200)
            print("\nsmall job (selftest.echo), medians, variants rotating")
            print(f"{'':28s} {'local ms':>9s} {'ssh ms':>9s} {'overhead':>9s} "
                  f"{'ssh, unshared':>14s} {'overhead':>9s}")  # fmt: skip
            print(f"{'start + job + close':28s} {trip['cold_local_ms']:9.0f} "
                  f"{trip['cold_ssh_ms']:9.0f} {trip['overhead_cold_ms']:9.0f} "
                  f"{trip['cold_ssh_unshared_ms']:14.0f} "
                  f"{trip['overhead_cold_unshared_ms']:9.0f}")  # fmt: skip
            print(f"{'job on a running worker':28s} {trip['warm_local_ms']:9.1f} "
                  f"{trip['warm_ssh_ms']:9.1f} {trip['overhead_warm_ms']:9.1f}")  # fmt: skip
            print(f"{'deploylens validate (CLI)':28s} {cli['local_ms']:9.0f} {cli['ssh_ms']:9.0f} "
                  f"{cli['ssh_ms'] - cli['local_ms']:9.0f} {cli['ssh_unshared_ms']:14.0f} "
                  f"{cli['ssh_unshared_ms'] - cli['local_ms']:9.0f}")  # fmt: skip
            print(f"\n{sent['size_mb']} MB over loopback ssh: send {sent['send_s']:.2f} s "
                  f"({sent['send_mb_s']:.0f} MB/s), again (cached) {sent['cached_send_s']:.2f} s, "
                  f"fetch {sent['fetch_s']:.2f} s ({sent['fetch_mb_s']:.0f} MB/s)")  # fmt: skip
        else:
            print("no sshd here (apt install openssh-server): SSH figures skipped")
        swept = results["sweeps"] = (
            [] if args.only == "ssh" else sweeps(scratch, 1 if args.quick else 3)
        )
        readme = results["readme_sweep"] = (
            {} if args.only == "ssh" else readme_sweep(scratch, 3 if args.quick else 7)
        )
    if swept:
        print_sweeps(swept)
    if readme:
        chose = ", ".join(sorted(set(readme["auto_chose"])))
        print(
            "\nthe README's sweep (small_cnn.batched, 27 points, 3 run on the CPU), medians: "
            f"worker {readme['worker_s']:.2f} s, auto {readme['auto_s']:.2f} s (chose {chose}): "
            f"{readme['auto_over_worker']:.2f}x, limit {AUTO_LIMIT:.2f}: {readme['verdict']}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def print_sweeps(swept: list[dict[str, Any]]) -> None:
    rounds = len(swept[0]["samples"]["ray"])
    print(f"\n16-point CPU sweeps on {os.cpu_count()} cores, median of {rounds}, alternating")
    print(f"{'model':42s} {'worker s':>9s} {'Ray s':>7s} {'auto s':>7s} {'auto chose':>11s} "
          f"{'Ray start s':>12s} {'speed-up':>9s} {'target':>7s} {'verdict':>8s}")  # fmt: skip
    for row in swept:
        target = f"{row['target']:.1f}" if row["target"] else "—"
        chose = "/".join(sorted(set(row["auto_chose"])))
        print(f"{row['case']:42s} {row['worker_s']:9.1f} {row['ray_s']:7.1f} "
              f"{row['auto_s']:7.1f} {chose:>11s} {row['ray_start_s']:12.1f} "
              f"{row['speedup']:9.2f} {target:>7s} {row['verdict']:>8s}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
