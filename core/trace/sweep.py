"""Sweeps: one capture per point of batch × streams × mode, one table, a throughput-vs-latency
plot, every point linked to its trace. A point that cannot run here (a GPU mode on the CPU, a
batch the model's fixed batch axis refuses) is skipped with its reason; a point that fails is
reported and the others go on."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, csv_text, save_png, write_json
from deploylens.core.trace.pipeline import Mode
from deploylens.core.trace.request import ProfileRequest
from deploylens.core.trace.result import SweepOutputs, SweepPoint

COLUMNS = ("mode", "streams", "batch", "status", "latency_ms_median", "throughput_per_s",
           "pattern", "trace", "reason", "attempts", "node")  # fmt: skip


def points(base: ProfileRequest, batches: list[int], streams: list[int], modes: list[Mode],
           on_cpu: bool) -> list[SweepPoint]:  # fmt: skip
    """Every combination; on the CPU only serial, one-stream points can run (said per point)."""
    result = []
    for mode, count, batch in itertools.product(modes, streams, batches):
        point = SweepPoint(mode, count, batch)
        if on_cpu and mode != "serial":
            point.status, point.reason = "skipped", f"--mode {mode} needs a CUDA device"
        elif on_cpu and count > 1:
            point.status, point.reason = "skipped", "streams mean nothing on the CPU"
        result.append(point)
    return result


def run_point(base: ProfileRequest, point: SweepPoint, folder: Path, threads: int = 0) -> None:
    """Capture one point in this process (the sweep job's worker, or a Ray task) and diagnose
    its trace; ``threads`` caps ONNX Runtime's (0: its default, every core)."""
    from deploylens.core.trace.diagnosis import diagnosis
    from deploylens.core.trace.load import load_trace
    from deploylens.core.trace.profiling import profile

    trace = folder / f"point-{point.mode}-s{point.streams}-b{point.batch}.json"
    request = replace(base, out=str(trace), mode=point.mode, streams=point.streams,
                      batch=point.batch)  # fmt: skip
    try:
        result = profile(request, threads)
    except UserError as exc:
        point.status, point.reason = "skipped", exc.message
        return
    except Exception as exc:  # one failed point never loses the others
        point.status, point.reason = "failed", f"{type(exc).__name__}: {exc}"
        return
    point.status = "ok"
    point.latency_ms_median = result.latency_ms_median
    point.throughput_per_s = result.throughput_per_s
    point.flags = [*result.flags, *result.notes]
    point.trace = str(trace)
    try:
        point.pattern = diagnosis(load_trace(trace)).pattern
    except UserError as exc:
        point.reason = f"trace not diagnosed: {exc.message}"


def point_on_node(base: dict[str, Any], point: dict[str, Any], model: Any, threads: int,
                  folder: str = "", marker: str = "") -> dict[str, Any]:  # fmt: skip
    """A Ray task: one point captured on whichever node Ray chose (the model shipped by
    content when it is a file). Where the sweep's ``folder`` is this node's too — its
    ``marker``, a file named at random by the sweep, is there: the same machine or a shared
    disk, which a host name cannot tell — the files are written straight into it (a trace can
    be 100 MB: no copy through Ray); elsewhere they go back as bytes ({name: bytes})."""
    import tempfile
    from dataclasses import asdict

    request = ProfileRequest.from_params(base)
    if model is not None:
        from deploylens.core.cluster import materialize

        request = replace(request, model=materialize(model))
    row = SweepPoint(**point)
    if folder and marker and (Path(folder) / marker).is_file():
        run_point(request, row, Path(folder), threads)
        return {"point": asdict(row), "files": {}}
    with tempfile.TemporaryDirectory(prefix="deploylens-point-") as scratch:
        run_point(request, row, Path(scratch), threads)
        files = {p.name: p.read_bytes() for p in Path(scratch).iterdir() if p.is_file()}
    return {"point": asdict(row), "files": files}


def write_outputs(folder: Path, rows: list[SweepPoint], title: str) -> SweepOutputs:
    """sweep.json, sweep.csv and sweep.png (throughput vs latency) in ``folder``."""
    from dataclasses import asdict

    data = [asdict(row) for row in rows]
    write_json(folder / "sweep.json", {"title": title, "points": data})
    atomic_write_text(folder / "sweep.csv", csv_text(COLUMNS, data))
    plot = folder / "sweep.png"
    plot_png(rows, plot, title)
    return SweepOutputs(str(folder / "sweep.json"), str(folder / "sweep.csv"), str(plot))


def plot_png(rows: list[SweepPoint], path: Path, title: str) -> None:
    """Throughput (x) against median latency (y), one labelled marker per point that ran."""
    from PIL import Image, ImageDraw

    width, height, margin = 900, 600, 70
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    ran = [r for r in rows if r.status == "ok" and r.throughput_per_s and r.latency_ms_median]
    draw.text((margin, 15), title, fill="black")
    draw.line([(margin, height - margin), (width - 20, height - margin)], fill="black")
    draw.line([(margin, 40), (margin, height - margin)], fill="black")
    draw.text((width // 2 - 60, height - 40), "throughput (samples/s)", fill="black")
    draw.text((8, 40), "median latency (ms)", fill="black")
    if ran:
        xs = [float(r.throughput_per_s or 0) for r in ran]
        ys = [float(r.latency_ms_median or 0) for r in ran]
        x_max, y_max = max(xs) * 1.1 or 1.0, max(ys) * 1.1 or 1.0
        for tick in range(5):
            x = margin + tick * (width - margin - 20) / 4
            y = height - margin - tick * (height - margin - 40) / 4
            draw.text((x - 15, height - margin + 6), f"{x_max * tick / 4:.0f}", fill="gray")
            draw.text((8, y - 6), f"{y_max * tick / 4:.2f}", fill="gray")
        colours = {"serial": "#1f77b4", "pipelined": "#2ca02c", "cudagraph": "#d62728",
                   "graph-pipelined": "#9467bd"}  # fmt: skip
        for row, x_value, y_value in zip(ran, xs, ys, strict=True):
            x = margin + x_value / x_max * (width - margin - 20)
            y = height - margin - y_value / y_max * (height - margin - 40)
            colour = colours.get(row.mode, "black")
            draw.ellipse([x - 5, y - 5, x + 5, y + 5], fill=colour)
            draw.text((x + 7, y - 7), row.label, fill=colour)
    else:
        draw.text((margin + 20, height // 2), "no point ran here (see the table)", fill="black")
    save_png(image, path)
