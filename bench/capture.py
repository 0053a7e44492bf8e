"""Capture-harness benchmark (issues #8, #16): resnet18 (random weights) through the PyTorch CUDA
path in serial, pipelined and CUDA-graph modes — pinned buffers, H2D → execute → D2H in NVTX and
record_function ranges. Prints headline latency/throughput from the unprofiled run, the
profiler's overhead, and the imported trace's copy/compute overlap and stream concurrency.
CPU-only machines run the ONNX Runtime and PyTorch CPU paths instead.

    python bench/capture.py [--quick] [--json PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--out", type=Path, help="keep the traces here")
    args = parser.parse_args()
    import torch
    import torchvision

    from deploylens.core.trace.capture import CaptureSettings, capture_torch
    from deploylens.core.trace.load import load_trace
    from deploylens.core.trace.stats import trace_stats

    out = args.out or Path(tempfile.mkdtemp(prefix="deploylens-capture-"))
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cuda = torch.cuda.is_available()
    batch = 32 if cuda else 2
    iterations = (16 if args.quick else 64) if cuda else 4
    rows = []
    modes = ("serial", "pipelined", "cudagraph") if cuda else ("serial",)
    for mode in modes:
        streams = 1
        module = torchvision.models.resnet18()
        trace_path = out / f"resnet18-{'cuda' if cuda else 'cpu'}-{mode}.json"
        settings = CaptureSettings(iterations=iterations, mode=mode, batch=batch, streams=streams)
        summary = capture_torch(
            module,
            torch.rand(1, 3, 224, 224),
            str(trace_path),
            settings,
            "cuda" if cuda else "cpu",
        )
        stats = trace_stats(load_trace(trace_path))
        ovl = stats.overlap
        total = sum(ovl.concurrency_ns.values()) or 1
        rows.append(
            {
                "mode": mode,
                **summary.to_dict(),
                "events": stats.events,
                "hidden_percent": ovl.hidden_percent,
                "concurrency": {k: v / total for k, v in ovl.concurrency_ns.items()},
                "copies": stats.tables()["copies"],
                "top_kernel": stats.kernels[0].name if stats.kernels else "",
                "hints": stats.hints,
            }
        )
    print(f"{rows[0].get('device', 'CPU')}, resnet18 batch {batch}, {iterations} iterations")
    print(
        f"{'mode':>10}{'img/s':>9}{'ms/batch':>10}{'overhead':>9}{'events':>8}"
        f"{'hidden %':>9}  concurrency"
    )
    for r in rows:
        hidden = f"{r['hidden_percent']:.1f}" if r["hidden_percent"] is not None else "-"
        conc = " ".join(f"{k}:{v:.0%}" for k, v in sorted(r["concurrency"].items()))
        overhead = r.get("profiler_overhead")
        over = f"{overhead:>8.2f}×" if overhead is not None else f"{'-':>9}"
        print(
            f"{r['mode']:>10}{r['throughput_per_s']:>9.0f}{r['latency_ms_median']:>10.2f}"
            f"{over}{r['events']:>8}{hidden:>9}  {conc}"
        )
        for flag in r.get("flags", []):
            print(f"{'':>10}flag: {flag}")
    for r in rows:
        for c in r["copies"]:
            print(
                f"  {r['mode']}: {c['kind']} {c['memory']}: {c['count']} copies, "
                f"median {c['median_gbps'] or 0:.1f} GB/s"
            )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
