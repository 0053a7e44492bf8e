"""Graph readability at full expansion (issue 33): resnet18, mobilenet_v2 and a transformer
block, our drawing next to Graphviz dot's layout of the same graph, side by side in one run.

Per model: edges (drawn), crossings per edge, edges passing through a node box that is not
theirs, and segments of two different tensors' edges drawn on top of each other (collinear and
overlapping by more than 2 px; edges of one tensor fanning out may share a trunk, counted apart).
Edge-label overlaps are painted by the GUI (gui/graph/canvas.py) and are not measured here.
Each layout's time is given in wall and CPU seconds (ours: this process; dot: its process).

    python bench/graph_readability.py --json bench/results/graph_readability.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import layout_quality as quality
from measure import measured_here

SHRINK = 2.0  # px: an edge touching a box's border where it enters is not "through" it
OVERLAP = 2.0  # px of shared collinear run before two segments count as drawn on each other


def models(folder: Path) -> dict[str, Path]:
    """The three graphs, exported here with the TorchScript exporter (names give groups)."""
    import torch
    import torchvision
    from torchvision.models.vision_transformer import EncoderBlock

    made: dict[str, Path] = {}
    for name, module, shape in (
        ("resnet18", torchvision.models.resnet18(), (1, 3, 224, 224)),
        ("mobilenet_v2", torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
        ("transformer_block", EncoderBlock(4, 64, 128, 0.0, 0.0), (1, 16, 64)),  # ViT's
    ):  # fmt: skip
        path = folder / f"{name}.onnx"
        torch.onnx.export(module.eval(), (torch.rand(*shape),), str(path), dynamo=False,
                          opset_version=17)  # fmt: skip
        made[name] = path
    return made


def segments_of(polylines: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return quality.segments(polylines)


def through_boxes(
    polylines: list[np.ndarray], rects: np.ndarray, own: list[tuple[int, int]]
) -> int:
    """Edges with a segment crossing the inside of a node box other than their two ends."""
    inner = rects + np.array([SHRINK, SHRINK, -SHRINK, -SHRINK])
    count = 0
    for edge, points in enumerate(polylines):
        hit = False
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if _segment_hits(x0, y0, x1, y1, inner, own[edge]):
                hit = True
                break
        count += hit
    return count


def _segment_hits(
    x0: float, y0: float, x1: float, y1: float, rects: np.ndarray, skip: tuple[int, int]
) -> bool:
    """Liang–Barsky clipping of one segment against every rectangle at once."""
    dx, dy = x1 - x0, y1 - y0
    lo, hi = np.zeros(len(rects)), np.ones(len(rects))
    for p, q in ((-dx, x0 - rects[:, 0]), (dx, rects[:, 2] - x0),
                 (-dy, y0 - rects[:, 1]), (dy, rects[:, 3] - y0)):  # fmt: skip
        if p == 0:
            outside = q < 0
            lo[outside], hi[outside] = 1.0, 0.0
            continue
        t = q / p
        if p < 0:
            lo = np.maximum(lo, t)
        else:
            hi = np.minimum(hi, t)
    hits = np.flatnonzero((lo < hi) & (rects[:, 2] > rects[:, 0]))
    return any(int(h) not in skip for h in hits)


def stacked(polylines: list[np.ndarray], tensors: np.ndarray) -> tuple[int, int]:
    """(pairs of different tensors' segments drawn on each other, same-tensor shared runs)."""
    seg, owner = segments_of(polylines)
    if not len(seg):
        return 0, 0
    p, d = seg[:, :2], seg[:, 2:] - seg[:, :2]
    length = np.hypot(d[:, 0], d[:, 1])
    keep = length > OVERLAP
    p, d, length, owner = p[keep], d[keep], length[keep], owner[keep]
    unit = d / length[:, None]
    different = same = 0
    for i in range(len(p)):
        cross = np.abs(unit[i, 0] * unit[:, 1] - unit[i, 1] * unit[:, 0])
        offset = np.abs((p[:, 0] - p[i, 0]) * unit[i, 1] - (p[:, 1] - p[i, 1]) * unit[i, 0])
        start = (p - p[i]) @ unit[i]
        end = (p + d - p[i]) @ unit[i]
        shared = np.minimum(np.maximum(start, end), length[i]) - np.maximum(
            np.minimum(start, end), 0.0
        )
        on = (cross < 1e-3) & (offset < 0.5) & (shared > OVERLAP) & (owner != owner[i])
        on[: i + 1] = False  # each pair once
        for j in np.flatnonzero(on):
            if tensors[owner[i]] == tensors[owner[j]]:
                same += 1
            else:
                different += 1
    return different, same


def ours(path: Path) -> dict[str, Any]:
    from deploylens.core.graph.ir import build_model_ir
    from deploylens.core.graph.scene import BOX_NODE, GraphScene
    from deploylens.core.model.loading import read_model

    with measured_here() as span:
        ir = build_model_ir(read_model(path))
        model = GraphScene(ir)
        model.expand_to_depth(64)
        scene = model.scene()
    offsets = scene.edge_offsets
    polylines = [scene.edge_points[offsets[e] : offsets[e + 1]] for e in range(len(offsets) - 1)]
    rects = np.where((scene.box_kind == BOX_NODE)[:, None], scene.box_rect, 0.0)
    own = list(zip(scene.edge_src_box.tolist(), scene.edge_dst_box.tolist(), strict=True))
    src, dst = scene.edge_src_box.astype(np.int64), scene.edge_dst_box.astype(np.int64)
    different, same = stacked(polylines, scene.edge_tensor)
    return {
        "nodes": ir.op_count, "weights_folded": len(ir.folded), "edges": len(polylines),
        "crossings_per_edge": quality.crossings(polylines, src, dst) / max(len(src), 1),
        "through_boxes": through_boxes(polylines, rects, own),
        "stacked_different_tensors": different, "stacked_same_tensor": same,
        "seconds": round(span.wall_s, 3), "cpu_seconds": round(span.cpu_s, 3),
    }  # fmt: skip


def dot(path: Path, timeout: float = 120.0) -> dict[str, Any] | None:
    """Graphviz dot on the same graph (flat: dot has no module frames), our node sizes."""
    from deploylens.core.graph.ir import build_model_ir
    from deploylens.core.model.loading import read_model

    ir = build_model_ir(read_model(path))
    n = ir.node_count
    width = np.array([max(56.0, 7.0 * len(ir.op_type(i)) + 20) for i in range(n)])
    src, dst = ir.edge_src.astype(np.int64), ir.edge_dst.astype(np.int64)
    laid = quality.dot_layout(n, src, dst, width, 30.0, timeout, with_nodes=True)
    if not laid or laid.get("polylines") is None:
        return None
    polylines, rects = laid["polylines"], laid["rects"]
    own = list(zip(src.tolist(), dst.tolist(), strict=True))
    tensors = ir.edge_tensor
    different, same = stacked(polylines, tensors)
    return {
        "edges": len(polylines),
        "crossings_per_edge": quality.crossings(polylines, src, dst) / max(len(src), 1),
        "through_boxes": through_boxes(polylines, rects, own),
        "stacked_different_tensors": different, "stacked_same_tensor": same,
        "seconds": round(float(laid["seconds"]), 3),
        "cpu_seconds": round(float(laid["cpu_seconds"]), 3),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in models(Path(scratch)).items():
            results[name] = {"ours": ours(path), "dot": dot(path)}
    keys = ("edges", "crossings_per_edge", "through_boxes", "stacked_different_tensors",
            "stacked_same_tensor", "seconds", "cpu_seconds")  # fmt: skip
    print(f"{'model':18s} {'layout':6s} " + " ".join(f"{k:>26s}" for k in keys))
    for name, row in results.items():
        for who in ("ours", "dot"):
            figures = row[who] or {}
            cells = " ".join(
                f"{figures.get(k, float('nan')):26.3f}" if isinstance(figures.get(k), float)
                else f"{figures.get(k, '—')!s:>26s}" for k in keys
            )  # fmt: skip
            print(f"{name:18s} {who:6s} {cells}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
