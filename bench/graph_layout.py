"""Graph view benchmark: first interactive view, expansion, paint, flat layout vs grandalf and
Graphviz dot, layout quality, peak memory — all side by side in one run.

    python bench/graph_layout.py [--quick] [--json PATH]

Targets (issue #3, tightened by issue 35): first view ≤ 1 s in-process at 100k nodes (≤ 1.5 s
as a whole process: bench/startup.py), beside onnx.load of the same file; expanding a 1,000-item
level ≤ 300 ms; one frame ≤ 16 ms at full zoom-out and mid zoom; flat layout ≤ 3 s at 10k and
≥ 20× grandalf.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
CACHE = Path(tempfile.gettempdir()) / "deploylens-bench"


def _paint_ms(canvas: Any, repeats: int = 7) -> float:
    from PySide6.QtGui import QImage, QPainter

    image = QImage(canvas.size(), QImage.Format.Format_RGB32)
    times = []
    for _ in range(repeats):
        painter = QPainter(image)
        started = time.perf_counter()
        canvas.paint_scene(painter, canvas.visible_rect(), canvas.transform(), canvas.scale)
        painter.end()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def case(path: str, expand_level: bool, flat_paint: bool) -> dict[str, Any]:
    """One model, in its own process: first view, expansion, paint, memory."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from deploylens.core.graph.ir import build_model_ir
    from deploylens.core.graph.overlay import op_type_overlay
    from deploylens.core.graph.scene import GraphScene
    from deploylens.core.model.loading import read_model
    from deploylens.gui.app import application

    application()
    from deploylens.gui.graph.canvas import GraphCanvas

    canvas = GraphCanvas()
    canvas.resize(1600, 1000)
    c0 = time.process_time()  # CPU beside wall: the wall figure moves with the machine's load
    t0 = time.perf_counter()
    model = read_model(path)
    t1 = time.perf_counter()
    ir = build_model_ir(model)
    t2 = time.perf_counter()
    scene_model = GraphScene(ir)
    scene_model.scene()
    t3 = time.perf_counter()
    canvas.set_model(scene_model)
    canvas.set_overlay(op_type_overlay(ir))
    first_paint = _paint_ms(canvas, repeats=1)
    t4 = time.perf_counter()
    c4 = time.process_time()
    row: dict[str, Any] = {
        "nodes": ir.op_count,
        "groups": ir.groups.count - 1,
        "hierarchy": ir.hierarchy,
        "parse_s": t1 - t0,
        "ir_s": t2 - t1,
        "layout_s": t3 - t2,
        "first_paint_ms": first_paint,
        "first_view_s": t4 - t0,
        "first_view_cpu_s": c4 - c0,
        "top_items": len(canvas.scene.box_kind),
        "paint_zoomed_out_ms": _paint_ms(canvas),
    }
    if expand_level:
        tree = ir.groups
        import numpy as np

        children = np.bincount(tree.parent[1:], minlength=tree.count) + np.bincount(
            tree.node_group, minlength=tree.count
        )
        candidates = [g for g in range(1, tree.count) if children[g] >= 2]
        if candidates:
            group = min(candidates, key=lambda g: abs(int(children[g]) - 1000))
            started, cpu = time.perf_counter(), time.process_time()
            scene_model.expand(group)
            canvas.refresh_scene()
            _paint_ms(canvas, repeats=1)
            row["expand_items"] = int(children[group])
            row["expand_nodes"] = int(scene_model.group_size[group])
            row["expand_ms"] = (time.perf_counter() - started) * 1000
            row["expand_cpu_ms"] = (time.process_time() - cpu) * 1000
    if flat_paint:
        started, cpu = time.perf_counter(), time.process_time()
        scene_model.expand_to_depth(ir.groups.max_depth)
        canvas.refresh_scene()
        row["expand_all_s"] = time.perf_counter() - started
        row["expand_all_cpu_s"] = time.process_time() - cpu
        canvas.fit()
        row["all_boxes"] = len(canvas.scene.box_kind)
        row["paint_all_zoomed_out_ms"] = _paint_ms(canvas)
        canvas.scale = 0.5
        row["paint_all_mid_zoom_ms"] = _paint_ms(canvas)
        row["mid_zoom_boxes_drawn"] = canvas.last_paint_stats.get("boxes", 0)
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import onnx  # the floor, in the same process after the view: protobuf parse of the file

    started, cpu = time.perf_counter(), time.process_time()
    onnx.load(path, load_external_data=False)
    row["onnx_load_s"] = time.perf_counter() - started
    row["onnx_load_cpu_s"] = time.process_time() - cpu
    return row


def run_case(path: Path, expand_level: bool = True, flat_paint: bool = False) -> dict[str, Any]:
    result = subprocess.run(
        [
            sys.executable,
            __file__,
            "--case",
            str(path),
            "--expand" if expand_level else "",
            "--flat-paint" if flat_paint else "",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def flat_comparison(
    path: Path, with_grandalf: bool, with_dot: bool, dot_timeout: float
) -> dict[str, Any]:
    """Our layered layout of the whole graph vs grandalf and dot, and quality vs dot."""
    import layout_quality as quality
    import numpy as np

    from deploylens.core.graph.ir import build_model_ir
    from deploylens.core.graph.layout import layered_layout
    from deploylens.core.model.loading import read_model

    ir = build_model_ir(read_model(path))
    n = ir.node_count
    width = np.array([max(56.0, 7.0 * len(ir.op_type(i)) + 20) for i in range(n)])
    src, dst = ir.edge_src.astype(np.int64), ir.edge_dst.astype(np.int64)
    started, cpu = time.perf_counter(), time.process_time()
    layout = layered_layout(n, src, dst, width, np.full(n, 30.0))
    ours = time.perf_counter() - started
    row: dict[str, Any] = {
        "nodes": n,
        "edges": len(src),
        "ours_s": ours,
        "ours_cpu_s": time.process_time() - cpu,
    }
    if with_grandalf:
        timed = quality.grandalf_layout(n, src, dst, width, 30.0)
        row["grandalf_s"], row["grandalf_cpu_s"] = timed if timed else (None, None)
    if with_dot:
        dot = quality.dot_layout(n, src, dst, width, 30.0, dot_timeout)
        row["dot_s"] = dot["seconds"] if dot else None
        row["dot_cpu_s"] = dot.get("cpu_seconds") if dot else None
        if dot and dot.get("polylines") is not None and n <= 2000:
            mine = [layout.edge_polyline(e) for e in range(len(src))]
            row["ours_crossings_per_edge"] = quality.crossings(mine, src, dst) / len(src)
            row["dot_crossings_per_edge"] = quality.crossings(dot["polylines"], src, dst) / len(src)
            row["ours_edge_length"] = quality.total_length(mine)
            row["dot_edge_length"] = quality.total_length(dot["polylines"])
    return row


def export_real_models(quick: bool) -> dict[str, Path]:
    """torchvision resnet50 and swin_t, exported once per machine into the temp cache."""
    script = HERE / "export_torchvision.py"
    wanted = ["resnet50:torchscript", "swin_t:torchscript"]
    if not quick:
        wanted += ["resnet50:dynamo", "swin_t:dynamo"]
    paths: dict[str, Path] = {}
    for item in wanted:
        name, exporter = item.split(":")
        out = CACHE / f"{name}.{exporter}.onnx"
        if not out.exists():
            result = subprocess.run(
                [sys.executable, str(script), name, exporter, str(out)],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                print(f"  (could not export {item}: {result.stderr.strip().splitlines()[-1:]})")
                continue
        paths[f"{name} ({exporter})"] = out
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--expand", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--flat-paint", action="store_true", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.case:
        print(json.dumps(case(args.case, args.expand, args.flat_paint)))
        return 0
    import generate_models as models

    CACHE.mkdir(parents=True, exist_ok=True)
    sizes = (1_000, 10_000, 100_000)
    results: dict[str, Any] = {"hierarchical": {}, "flat_view": {}, "flat_layout": {}, "real": {}}
    print(
        "\nfirst interactive view (parse + IR + top-level layout + first paint), one process each;"
        "\nCPU seconds of this process beside wall (whole-process ratios: bench/startup.py)"
    )
    print(
        f"{'model':28s} {'nodes':>8s} {'groups':>7s} {'view s':>7s} {'CPU s':>6s} {'IR s':>6s} "
        f"{'layout s':>8s} {'paint ms':>8s} {'expand':>16s} {'RSS MB':>7s} {'onnx.load s':>11s} "
        f"{'CPU s':>6s}"
    )

    def show(name: str, row: dict[str, Any]) -> None:
        expand = f"{row['expand_ms']:.0f} ms/{row['expand_items']}it" if "expand_ms" in row else ""
        print(
            f"{name:28s} {row['nodes']:8,} {row['groups']:7,} {row['first_view_s']:7.3f} "
            f"{row['first_view_cpu_s']:6.3f} {row['ir_s']:6.3f} {row['layout_s']:8.3f} "
            f"{row['first_paint_ms']:8.1f} {expand:>16s} {row['peak_rss_mb']:7.0f} "
            f"{row['onnx_load_s']:11.3f} {row['onnx_load_cpu_s']:6.3f}"
        )

    for size in sizes:
        path = models.transformer_like(CACHE / f"tl_{size}.onnx", size)
        results["hierarchical"][size] = row = run_case(path)
        show(f"transformer-like {size:,}", row)
    for name, path in export_real_models(args.quick).items():
        results["real"][name] = row = run_case(path)
        show(name, row)

    print("\nflat models (no hierarchy: levels chunked at 1,000), everything expanded")
    print(
        f"{'model':28s} {'boxes':>7s} {'expand all s':>12s} {'CPU s':>7s} {'paint out ms':>12s} "
        f"{'paint mid ms':>12s}"
    )
    for size in (1_000, 10_000):
        path = models.transformer_like(CACHE / f"tl_flat_{size}.onnx", size, flat=True)
        results["flat_view"][size] = row = run_case(path, expand_level=False, flat_paint=True)
        print(
            f"{'flat ' + format(size, ','):28s} {row['all_boxes']:7,} {row['expand_all_s']:12.3f} "
            f"{row['expand_all_cpu_s']:7.3f} {row['paint_all_zoomed_out_ms']:12.1f} "
            f"{row['paint_all_mid_zoom_ms']:12.1f}"
        )

    print("\nflat full layout of the whole graph (our engine vs grandalf and Graphviz dot)")
    print(
        f"{'graph':14s} {'ours s':>8s} {'CPU s':>6s} {'grandalf s':>10s} {'dot s':>8s} "
        f"{'CPU vs grandalf':>15s} {'CPU vs dot':>10s}"
    )
    for size in (1_000, 10_000):
        path = models.transformer_like(CACHE / f"tl_flat_{size}.onnx", size, flat=True)
        heavy = size >= 10_000
        row = flat_comparison(
            path,
            with_grandalf=not (heavy and args.quick),
            with_dot=not (heavy and args.quick),
            dot_timeout=600 if heavy else 120,
        )
        results["flat_layout"][size] = row
        g, d, ours = row.get("grandalf_s"), row.get("dot_s"), row["ours_s"]
        g_cpu, d_cpu, ours_cpu = row.get("grandalf_cpu_s"), row.get("dot_cpu_s"), row["ours_cpu_s"]
        g_text = f"{g:.2f}" if g else "-"
        d_text = f"{d:.2f}" if d else "-"
        # the ratios in CPU seconds (wall moves with the load; dot's CPU is its own process's)
        g_ratio = f"{g_cpu / ours_cpu:.0f}x" if g_cpu else "-"
        d_ratio = f"{d_cpu / ours_cpu:.0f}x" if d_cpu else "-"
        print(
            f"{size:<14,} {ours:8.3f} {row['ours_cpu_s']:6.3f} {g_text:>10s} {d_text:>8s} "
            f"{g_ratio:>15s} {d_ratio:>10s}"
        )
    quality = results["flat_layout"][1_000]
    if "dot_crossings_per_edge" in quality:
        print("\nlayout quality on the 1k graph (dot is the reference):")
        print(
            f"  crossings per edge  ours {quality['ours_crossings_per_edge']:.3f}  "
            f"dot {quality['dot_crossings_per_edge']:.3f}"
        )
        print(
            f"  total edge length   ours {quality['ours_edge_length']:,.0f} px  "
            f"dot {quality['dot_edge_length']:,.0f} px  "
            f"(ratio {quality['ours_edge_length'] / quality['dot_edge_length']:.2f})"
        )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
