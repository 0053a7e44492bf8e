"""Layout-quality figures: edge crossings and total edge length of polyline drawings, and the
same graph laid out by Graphviz dot (the quality reference) and grandalf (the pure-Python one)."""

from __future__ import annotations

import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from deploylens.core.graph.layout import NODE_GAP, RANK_GAP


def segments(polylines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """All segments (K, 4) and the edge each belongs to."""
    parts, owner = [], []
    for edge, points in enumerate(polylines):
        if len(points) >= 2:
            parts.append(np.hstack([points[:-1], points[1:]]))
            owner.extend([edge] * (len(points) - 1))
    return (np.vstack(parts) if parts else np.zeros((0, 4))), np.array(owner)


def crossings(polylines: list[np.ndarray], src: np.ndarray, dst: np.ndarray) -> int:
    """Proper crossings between segments of different edges that share no endpoint node."""
    seg, owner = segments(polylines)
    total = 0
    chunk = 512
    p, r = seg[:, :2], seg[:, 2:] - seg[:, :2]
    for start in range(0, len(seg), chunk):
        a = slice(start, start + chunk)
        pa, ra = p[a][:, None, :], r[a][:, None, :]
        qb, sb = p[None, :, :], r[None, :, :]
        denom = ra[..., 0] * sb[..., 1] - ra[..., 1] * sb[..., 0]
        diff = qb - pa
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (diff[..., 0] * sb[..., 1] - diff[..., 1] * sb[..., 0]) / denom
            u = (diff[..., 0] * ra[..., 1] - diff[..., 1] * ra[..., 0]) / denom
        hit = (np.abs(denom) > 1e-9) & (t > 1e-6) & (t < 1 - 1e-6) & (u > 1e-6) & (u < 1 - 1e-6)
        ea, eb = owner[a][:, None], owner[None, :]
        shared = (
            (src[ea] == src[eb])
            | (src[ea] == dst[eb])
            | (dst[ea] == src[eb])
            | (dst[ea] == dst[eb])
        )
        hit &= (ea < eb) & ~shared
        total += int(hit.sum())
    return total


def total_length(polylines: list[np.ndarray]) -> float:
    return float(sum(np.linalg.norm(np.diff(p, axis=0), axis=1).sum() for p in polylines))


def dot_layout(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    width: np.ndarray,
    height: float,
    timeout: float,
    with_nodes: bool = False,
) -> dict[str, object] | None:
    """Graphviz dot with our node sizes and gaps; polylines from its spline control points
    (and, ``with_nodes``, each node's box as x0, y0, x1, y1 in the same coordinates)."""
    if shutil.which("dot") is None:
        return None
    lines = [
        "digraph G {",
        f"ranksep={RANK_GAP / 72:.3f}; nodesep={NODE_GAP / 72:.3f};",
        "node [shape=box, fixedsize=true];",
    ]
    lines += [f"n{i} [width={width[i] / 72:.3f}, height={height / 72:.3f}];" for i in range(n)]
    lines += [f"n{s} -> n{d};" for s, d in zip(src.tolist(), dst.tolist(), strict=True)]
    lines.append("}")
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "g.dot"
        path.write_text("\n".join(lines))
        started, cpu = time.perf_counter(), _children_cpu()
        try:
            out = subprocess.run(
                ["dot", "-Tplain", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            ).stdout
        except subprocess.TimeoutExpired:
            return {"seconds": None, "timeout": timeout}
        seconds = time.perf_counter() - started
        cpu_seconds = _children_cpu() - cpu
    polylines: list[np.ndarray] = []
    rects = np.zeros((n, 4))
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "node" and with_nodes:
            index = int(parts[1][1:])
            x, y, w, h = (float(v) * 72 for v in parts[2:6])
            rects[index] = (x - w / 2, -y - h / 2, x + w / 2, -y + h / 2)
        if parts and parts[0] == "edge":
            count = int(parts[3])
            coords = np.array(parts[4 : 4 + 2 * count], dtype=float).reshape(count, 2) * 72
            coords[:, 1] = -coords[:, 1]  # dot's y grows upwards
            polylines.append(coords)
    result: dict[str, object] = {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "polylines": polylines,
    }
    if with_nodes:
        result["rects"] = rects
    return result


def grandalf_layout(
    n: int, src: np.ndarray, dst: np.ndarray, width: np.ndarray, height: float
) -> tuple[float, float] | None:
    """(wall, CPU) seconds of grandalf's Sugiyama layout of the graph, None without it."""
    try:
        from grandalf.graphs import Edge, Graph, Vertex
        from grandalf.layouts import SugiyamaLayout
    except ImportError:
        return None

    class View:
        def __init__(self, w: float, h: float) -> None:
            self.w, self.h = w, h

    vertices = [Vertex(i) for i in range(n)]
    for vertex, w in zip(vertices, width.tolist(), strict=True):
        vertex.view = View(w, height)
    edges = [
        Edge(vertices[s], vertices[d]) for s, d in zip(src.tolist(), dst.tolist(), strict=True)
    ]
    started, cpu = time.perf_counter(), time.process_time()
    graph = Graph(vertices, edges)
    for component in graph.C:
        layout = SugiyamaLayout(component)
        layout.init_all()
        layout.draw()
    return time.perf_counter() - started, time.process_time() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
