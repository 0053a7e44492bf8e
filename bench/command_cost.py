"""Whole commands against their peer or floor, in CPU seconds of the process tree (issue 47):
each pair run interleaved (ours, theirs, ours, theirs …) in one run, so load moves both alike.

- inspect vit_b_16 / swin_t (default checks) vs ``polygraphy inspect model``: <= 1.2x (and RSS)
- ``support`` 10k nodes ``--target trt-rtx`` vs ``onnx.load`` in a fresh interpreter: <= 3x;
  the same on the vision models, whose weights are inline (not a row of the issue: beside it)
- ``graph --stats`` 100k nodes vs ``onnx.load``: <= 2x
- ``trace --stats`` 1M events (Chrome JSON) vs the decode floor (msgspec's typed decode of the
  events in one process, bench/timeline.py's floor) in a fresh interpreter: <= 1.5x
- ``validate --layerwise`` vit_b_16 ``--torch torchvision:vit_b_16``: <= 5 s of CPU; beside it
  the least script that validates the outputs at all (import torch, torchvision and ONNX
  Runtime, build the seeded model, one session, both forward passes, one difference), so the
  goal can be read against what any tool must spend (not in ``--quick``)

The vision models are torchvision's with random weights, exported by ``torch.onnx.export``
(TorchScript) into ``--models`` once and reused. ``--quick``: one repeat, resnet18 in place of
vit_b_16 and swin_t, 2k/20k-node graphs.

    python bench/command_cost.py [--quick] [--models DIR] [--json out.json]

``--ours-from DIR`` runs our commands with ``PYTHONPATH=DIR`` (a folder holding a
``deploylens/`` whose rooms link to another checkout). ``--before DIR`` runs them from there
too, as a third side interleaved with this checkout and the peer round by round: a before/after
figure whose sides saw the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from generate_models import many_nodes  # noqa: E402
from measure import Measured, run_measured  # noqa: E402

BIN = Path(sys.executable).parent
VALIDATE_GOAL_S = 5.0
DEPLOYLENS = str(BIN / "deploylens")
POLYGRAPHY = str(BIN / "polygraphy")
LOAD = [sys.executable, "-c", "import sys, onnx; onnx.load(sys.argv[1])"]


EXPORT = """
import sys, torch, torchvision
name, path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)  # validate's torchvision:NAME (seed 0): the layers compared are the same model
model = getattr(torchvision.models, name)(weights=None).eval()
# with grad enabled: under no_grad torchvision's attention takes a fused fast path
# (aten::_native_multi_head_attention) the TorchScript exporter has no symbolic for
torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path, dynamo=False, opset_version=17)
"""


def export_torchvision(name: str, folder: Path) -> Path:
    """``name`` from torchvision, random weights, exported once (TorchScript exporter) in a
    child process: Linux carries a parent's peak RSS into the children it forks, so a bench
    that had torch and the model in memory would report that peak for every command."""
    # unseeded until 2026-12-03: validate's torchvision:NAME compared another random model
    path = folder / f"{name}.seed0.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", EXPORT, name, str(path)], check=True)
    return path


LEAST_VALIDATE = """
import sys
import numpy as np
import onnxruntime as ort
import torch
import torchvision
path, name = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torchvision.models.get_model(name, weights=None).eval()
session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
meta = session.get_inputs()[0]
shape = [d if isinstance(d, int) else 1 for d in meta.shape]
x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
got = session.run(None, {meta.name: x})[0]
with torch.no_grad():
    want = model(torch.from_numpy(x)).numpy()
print(float(np.abs(got - want).max()))
"""

# the import's own chunk size: 32 MB chunks (until 2026-12-02) spent ~0.7 s of system time at 1M
# events taking fresh pages for each chunk's events, a floor ~1.6x dearer than the decode
# (bench/trace_chunks.py runs the same floor in other chunk sizes: TRACE [CHUNK_BYTES])
FLOOR = """
import sys
from deploylens.core.trace.chrome import decode_events
from deploylens.core.trace.json_stream import CHUNK, iter_chunks
chunk = int(sys.argv[2]) if len(sys.argv) > 2 else CHUNK
sum(len(events) for events in iter_chunks(sys.argv[1], decode_events, chunk=chunk))
"""


def synthetic_trace(events: int, folder: Path) -> Path:
    """The timeline bench's synthetic Chrome trace (16 lanes), written once and reused."""
    path = folder / f"trace_{events}.json"
    if not path.exists():
        sys.path.insert(0, str(ROOT))  # the generator lives with the tests
        from deploylens.core.trace.export import write_chrome
        from tests.helpers.synthetic_trace import make_trace

        folder.mkdir(parents=True, exist_ok=True)
        write_chrome(make_trace(events, lanes=16), path)
    return path


def interleaved(
    pairs: list[tuple[str, list[str], dict[str, str] | None]], repeats: int
) -> dict[str, list[Measured]]:
    runs: dict[str, list[Measured]] = {label: [] for label, _, _ in pairs}
    for _ in range(repeats):
        for label, command, env in pairs:
            run = run_measured(command, timeout=900, env=env)
            # validate's verdict (1 FAIL, 3 INCONCLUSIVE) is not what is measured here
            if run.rc not in ((0, 1, 3) if "validate" in command else (0,)):
                raise SystemExit(f"{label}: exit {run.rc}\n{run.stderr[-2000:]}")
            runs[label].append(run)
    return runs


def summary(runs: list[Measured]) -> dict[str, float]:
    return {
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "wall_s": statistics.median(r.wall_s for r in runs),
        "peak_mb": max(r.peak_mb for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--models", type=Path, default=ROOT / "out" / "bench-models")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--ours-from", type=Path, help="PYTHONPATH for our commands")
    parser.add_argument("--only", default="", help="rows whose command contains this text")
    parser.add_argument(
        "--before", type=Path, help="PYTHONPATH of an older checkout: a third side, interleaved"
    )
    parser.add_argument("--repeats", type=int, help="rounds per side (default 3, --quick 1)")
    args = parser.parse_args()
    # every side with one OpenBLAS thread, as our commands run (core/blas.py): a spare thread
    # spins after numpy loads (~0.1 s of CPU), which is not the work compared; peers and floors
    # ran with the default until 2026-12-02
    from deploylens.core.blas import one_blas_thread

    one_blas_thread(os.environ)
    ours_env = None
    if args.ours_from:
        ours_env = {**os.environ, "PYTHONPATH": str(args.ours_from)}
    repeats = args.repeats or (1 if args.quick else 3)
    before_env = {**os.environ, "PYTHONPATH": str(args.before)} if args.before else None
    vision = ["resnet18"] if args.quick else ["vit_b_16", "swin_t"]
    small, large = (2_000, 20_000) if args.quick else (10_000, 100_000)
    rows = []
    cases: list[tuple[str, list[str], str, list[str], float]] = []
    for name in vision:
        model = str(export_torchvision(name, args.models))
        cases.append(
            (
                f"inspect {name}",
                [DEPLOYLENS, "inspect", model],
                "polygraphy inspect model",
                [POLYGRAPHY, "inspect", "model", model],
                1.2,
            )
        )
    for name in vision:  # the support row's ratio on models with their weights inline
        model = str(export_torchvision(name, args.models))
        cases.append(
            (
                f"support {name} --target trt-rtx",
                [DEPLOYLENS, "support", model, "--target", "trt-rtx"],
                "onnx.load",
                [*LOAD, model],
                3.0,
            )
        )
    support_model = str(many_nodes(args.models / f"many_{small}.onnx", small))
    cases.append(
        (
            f"support {small:,} nodes --target trt-rtx",
            [DEPLOYLENS, "support", support_model, "--target", "trt-rtx"],
            "onnx.load",
            [*LOAD, support_model],
            3.0,
        )
    )
    graph_model = str(many_nodes(args.models / f"many_{large}.onnx", large))
    cases.append(
        (
            f"graph --stats {large:,} nodes",
            [DEPLOYLENS, "graph", "--stats", graph_model],
            "onnx.load",
            [*LOAD, graph_model],
            2.0,
        )
    )
    events = 100_000 if args.quick else 1_000_000
    trace = synthetic_trace(events, args.models)
    cases.append(
        (
            f"trace --stats {events:,} events",
            [DEPLOYLENS, "trace", "--stats", str(trace)],
            "decode floor (one process)",
            [sys.executable, "-c", FLOOR, str(trace)],
            1.5,
        )
    )
    if not args.quick:
        vit = str(export_torchvision("vit_b_16", args.models))
        layerwise = ["--layerwise", "--torch", "torchvision:vit_b_16"]
        cases.append(
            (
                "validate --layerwise vit_b_16",
                [DEPLOYLENS, "validate", vit, *layerwise],
                "least script (outputs only)",
                [sys.executable, "-c", LEAST_VALIDATE, vit, "vit_b_16"],
                VALIDATE_GOAL_S,  # seconds of CPU, not a ratio: the floor is for reference
            )
        )
    for label, ours, peer_label, peer, target in cases:
        if args.only not in label:
            continue
        sides = [("ours", ours, ours_env), ("peer", peer, None)]
        if before_env is not None:
            sides.insert(0, ("before", ours, before_env))
        runs = interleaved(sides, repeats)
        a, b = summary(runs["ours"]), summary(runs["peer"])
        if before_env is not None:
            old = summary(runs["before"])
            print(
                f"{label}: before {old['cpu_s']:.2f} s CPU ({old['cpu_s'] / b['cpu_s']:.2f}x), "
                f"this checkout {a['cpu_s']:.2f} s ({a['cpu_s'] / b['cpu_s']:.2f}x); per round "
                + ", ".join(f"{o.cpu_s:.2f}/{n.cpu_s:.2f}/{p.cpu_s:.2f}" for o, n, p in
                            zip(runs["before"], runs["ours"], runs["peer"], strict=True))
                + " (before/ours/peer)"
            )  # fmt: skip
        rows.append(
            {
                "command": label,
                "peer": peer_label,
                "ours": a,
                "theirs": b,
                "cpu_ratio": a["cpu_s"] / max(b["cpu_s"], 1e-9),
                "wall_ratio": a["wall_s"] / max(b["wall_s"], 1e-9),
                "rss_ratio": a["peak_mb"] / max(b["peak_mb"], 1e-9),
                "target_cpu_ratio": target,
                **({"before": summary(runs["before"])} if before_env is not None else {}),
            }
        )
    head = f"{'command':<36} {'ours CPU/wall s':>16} {'peer':<26} {'CPU/wall s':>12}"
    print(head + f" {'CPU x':>6} {'wall x':>6} {'RSS x':>6} {'target':>6}")
    for r in rows:
        ours = f"{r['ours']['cpu_s']:.2f}/{r['ours']['wall_s']:.2f}"
        theirs = f"{r['theirs']['cpu_s']:.2f}/{r['theirs']['wall_s']:.2f}"
        print(
            f"{r['command']:<36} {ours:>16} {r['peer']:<26} {theirs:>12} {r['cpu_ratio']:>6.2f}"
            f" {r['wall_ratio']:>6.2f} {r['rss_ratio']:>6.2f} {r['target_cpu_ratio']:>6.1f}"
        )
    for r in rows:
        if r["command"].startswith("validate"):
            met = "met" if r["ours"]["cpu_s"] <= VALIDATE_GOAL_S else "not met"
            print(
                f"{r['command']}: {r['ours']['cpu_s']:.2f} s CPU against a goal of "
                f"{VALIDATE_GOAL_S:.0f} s ({met}); the least script validating the outputs "
                f"alone (imports, model, one session, both forwards) {r['theirs']['cpu_s']:.2f} s"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"repeats": repeats, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
