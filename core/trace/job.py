"""The ``trace.profile`` worker job: run a model repeatedly under a profiler and write a trace.
It runs in the worker because it runs the user's model (ONNX Runtime sessions, PyTorch modules
from user code with consent, TensorRT engines) — a crash there never takes the GUI down."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from deploylens.core.trace.profiling import profile
from deploylens.core.trace.request import ProfileRequest
from deploylens.core.trace.result import LabResult, ProfileResult, SweepResult


def profile_job(ctx: Any, params: dict[str, Any]) -> ProfileResult:
    request = ProfileRequest.from_params(params)
    ctx.progress(0.05, f"profiling {request.model} with {request.backend}")
    result = profile(request)
    ctx.progress(1.0, "trace written")
    return result


def sweep_job(ctx: Any, params: dict[str, Any]) -> SweepResult:
    """Every point of the sweep, in this worker one after another or as Ray tasks (embedded
    or on a cluster); each finished point goes to the app at once (progress ``data``), skipped
    and failed points are kept with reasons. ``auto`` takes Ray only where it pays: a cluster
    address, several GPUs, or CPU work (estimated from the cheapest point, run first) long
    enough to repay Ray's start; a Ray that cannot start leaves the points to the worker."""
    from dataclasses import asdict

    from deploylens.core import cluster as ray_cluster
    from deploylens.core import ray_start
    from deploylens.core.trace.request import SweepRequest
    from deploylens.core.trace.sweep import points, run_point, write_outputs

    request = SweepRequest.from_params(params)
    base = request.base()
    base.check()
    folder = Path(request.out)
    folder.mkdir(parents=True, exist_ok=True)
    cluster: Any = None
    starting: Any = None
    fell_back = ""
    try:
        asked = ray_cluster.choose(request.executor, request.ray_address)
        on_cpu = _runs_on_cpu(request)
        if asked == "ray" and (request.ray_address or not on_cpu):
            # GPU points, or a cluster: what its nodes have decides the points, so Ray first
            ctx.progress(0.0, "starting Ray" + (f" at {request.ray_address}" if request.ray_address
                                                else ""))  # fmt: skip
            starting = ray_start.Starting(request.ray_address)
            cluster = starting.result()
            on_cpu = _cluster_cpu_only(request, cluster)
        rows = points(base, request.batches, request.streams, request.modes, on_cpu)
        runnable = sorted((row for row in rows if row.status == "pending"), key=_cost)
        total, done_here = len(runnable), 0

        def ran_here(row: Any, threads: int = 0, node: str = "") -> None:
            nonlocal done_here
            run_point(base, row, folder, threads=threads)
            row.node = node or row.node
            done_here += 1
            ctx.progress(done_here / max(total, 1), f"{row.label}: {row.status}",
                         data={"point": asdict(row)})  # fmt: skip

        executor, reason = asked, "asked for" if asked != "auto" else ""
        if asked == "auto":
            if not on_cpu:
                executor, reason = _auto_for_gpus()
            elif runnable:
                # the two cheapest points measure what the rest will cost: a fixed part and a
                # part per sample (a wide model's batch 16 costs far less than 16 of batch 1)
                measured = []
                for row in runnable[:2]:
                    began = time.perf_counter()
                    ran_here(row)
                    measured.append((_cost_units(row), time.perf_counter() - began))
                del runnable[: len(measured)]
                executor, reason = ray_cluster.auto_for_cpu_work(
                    _estimate(measured, [_cost_units(row) for row in runnable])
                )
            else:
                executor, reason = "worker", "no point to run"
        # CPU points need no answer from Ray to be laid out: Ray starts in the background (~2-5 s)
        # while the cheapest points run here, on one core
        early = executor == "ray" and cluster is None and on_cpu
        if executor == "ray" and cluster is None:
            ctx.progress(
                done_here / max(total, 1),
                "starting Ray" + (f" at {request.ray_address}" if request.ray_address else ""),
            )
            try:
                if early:
                    starting = ray_start.Starting(request.ray_address)
                    # at most half the points run here while Ray starts: the biggest are Ray's
                    while len(runnable) > total // 2 and not starting.ready():
                        ran_here(runnable.pop(0), 1, "this worker, while Ray started")
                    cluster = starting.result()
                else:
                    starting = ray_start.Starting(request.ray_address)
                    cluster = starting.result()
            except ray_start.RayUnavailable as exc:
                if request.executor != "auto":
                    raise
                executor, fell_back = "worker", exc.message
                reason = f"Ray could not start, so the worker ran the points: {exc.message}"
        if cluster is not None and not on_cpu and cluster.gpus < 1:
            for row in runnable:  # a GPU point would wait for a GPU forever
                row.status = "skipped"
                row.reason = (
                    f"it needs a GPU and the Ray cluster has none ({cluster.nodes} node(s))"
                )
            runnable = []
        if cluster is not None:
            _sweep_on_ray(ctx, request, base, runnable, folder, on_cpu, done_here, total)
        else:
            for row in list(runnable):
                ctx.progress(done_here / max(total, 1), f"point {done_here + 1}/{total}: "
                             f"{row.label}")  # fmt: skip
                ran_here(row)
    finally:
        if starting is not None:  # Ray stops in the thread that started it, even after a cancel
            starting.stop()
    where = ", CPU" if on_cpu else ""
    if cluster is not None:
        where += f", Ray: {cluster.nodes} node{'s' if cluster.nodes != 1 else ''}"
    outputs = write_outputs(folder, rows, f"{request.model} ({request.backend}{where})")
    ctx.progress(1.0, "sweep written")
    return SweepResult(
        points=rows,
        outputs=outputs,
        ran=sum(row.status == "ok" for row in rows),
        skipped=sum(row.status == "skipped" for row in rows),
        failed=sum(row.status == "failed" for row in rows),
        retried=sum(row.attempts > 1 for row in rows),
        on_cpu=on_cpu,
        executor=executor,
        executor_reason=reason,
        ray_unavailable=fell_back,
        cluster=cluster,
    )


def _auto_for_gpus() -> tuple[str, str]:
    """GPU points: Ray pays when it can run points on several GPUs at once."""
    from deploylens.core import cluster as ray_cluster

    try:
        import torch

        gpus = torch.cuda.device_count()
    except ImportError:
        gpus = 0
    if gpus >= 2 and ray_cluster.available():
        return "ray", f"{gpus} GPUs: one point per GPU at a time"
    return "worker", f"{gpus} GPU{'s' if gpus != 1 else ''} here: Ray would only add its start"


def _cost(row: Any) -> tuple[int, int]:
    """How big a point is, roughly: what it feeds per batch."""
    return (row.batch * row.streams, row.batch)


def _estimate(measured: list[tuple[int, float]], costs: list[int]) -> float:
    """Seconds the points of ``costs`` will take, from (cost, seconds) of points already run:
    a line through the two (its slope never below 0), or proportional to the one."""
    if not costs:
        return 0.0
    if len(measured) == 1 or measured[0][0] == measured[-1][0]:
        cost, seconds = measured[0]
        return seconds * sum(costs) / cost
    (c0, t0), (c1, t1) = measured[0], measured[-1]
    slope = max(0.0, (t1 - t0) / (c1 - c0))
    fixed = max(0.0, t0 - slope * c0)
    return sum(fixed + slope * cost for cost in costs)


def _cost_units(row: Any) -> int:
    """A point's work relative to another's: samples fed per iteration (≥ 1)."""
    result: int = max(1, row.batch * row.streams)
    return result


def _cluster_cpu_only(request: Any, cluster: Any) -> bool:
    """On Ray, GPU points need a GPU somewhere in the cluster, not in this worker."""
    if request.backend == "ort":
        return True
    if request.backend == "trt":
        return False
    if request.device:
        return bool(request.device == "cpu")
    return bool(cluster.gpus < 1)


def _sweep_on_ray(ctx: Any, request: Any, base: Any, runnable: list[Any], folder: Path,
                  on_cpu: bool, done_before: int = 0, total: int = 0) -> None:  # fmt: skip
    """Each runnable point a Ray task (a GPU each for GPU points, one core each on the CPU);
    traces come back as bytes and are written here, atomically, as each point finishes."""
    import uuid
    from dataclasses import asdict

    from deploylens.core import cluster as ray_cluster
    from deploylens.core.files import atomic_write_bytes

    model = Path(request.model)
    shipped = ray_cluster.put_files([model]).get(str(model)) if model.is_file() else None
    params = base.to_params()
    by_label = {row.label: row for row in runnable}
    marker = folder / f".deploylens-sweep-{uuid.uuid4().hex}"  # a node that sees it shares it
    marker.touch()
    here = {"folder": str(folder.resolve()), "marker": marker.name}
    calls = [
        ray_cluster.Call(row.label, "deploylens.core.trace.sweep:point_on_node",
                         {"base": params, "point": asdict(row), "model": shipped, "threads": 1,
                          **here}, cpus=1.0, gpus=0.0 if on_cpu else 1.0)
        for row in sorted(runnable, key=_cost, reverse=True)
    ]  # fmt: skip  # biggest points first: the last ones to finish are the short ones

    def landed(outcome: Any) -> None:
        row = by_label[outcome.key]
        if outcome.status == "ok":
            done = outcome.value["point"]
            for name in ("status", "latency_ms_median", "throughput_per_s", "pattern", "reason",
                         "flags"):  # fmt: skip
                setattr(row, name, done[name])
            for name, data in outcome.value["files"].items():  # from another machine
                atomic_write_bytes(folder / Path(name).name, data)
            if done["trace"]:
                row.trace = str(folder / Path(done["trace"]).name)
        else:
            row.status = "failed"
        row.attempts, row.node = outcome.attempts, outcome.node
        row.reason = "; ".join(text for text in (row.reason, outcome.note()) if text)
        ctx.progress((done_before + outcome.done) / max(total, outcome.of),
                     f"{row.label}: {row.status}", data={"point": asdict(row)})  # fmt: skip

    try:
        ray_cluster.fan_out(calls, landed, lambda: ctx.cancelled)
    finally:
        marker.unlink(missing_ok=True)


def _runs_on_cpu(request: Any) -> bool:
    if request.backend == "ort":
        return True  # ONNX Runtime's CPU provider (onnxruntime-gpu is not supported here)
    if request.backend == "trt":
        return False
    if request.device:
        result: bool = request.device == "cpu"
        return result
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


def lab_job(ctx: Any, params: dict[str, Any]) -> LabResult:
    from deploylens.core.trace.lab import run_lab
    from deploylens.core.trace.request import LabRequest

    request = LabRequest.from_params(params)
    ctx.progress(0.1, f"lab scenario {request.name}")
    return run_lab(request.name, request.out, request.synthetic)
