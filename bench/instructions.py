"""Instructions, not seconds: the hot builds under callgrind, this checkout beside another.

On these shared machines the same command's CPU seconds moved by 20-40 % between runs minutes
apart (trace --stats 1M: 2.04-2.79 s, one code, five rounds), so a 5-20 % change in one step
of a command cannot be seen in them. ``valgrind --tool=callgrind`` counts the instructions a
process executes: the same count whatever the load (PLATFORM.md), within ~2 % between runs of
the same code here (addresses still move dict and allocator paths; PYTHONHASHSEED is fixed).
Each case runs its setup alone and setup + step, and reports the difference: the step's own
instructions. ``--ours-from DIR`` runs the same cases with ``PYTHONPATH=DIR`` (a folder holding
a ``deploylens/`` whose rooms link to another checkout, as for bench/command_cost.py).

    python bench/instructions.py [--quick] [--ours-from DIR] [--only TEXT] [--json out.json]

Instructions are not seconds: a memory-bound step (msgspec's decode) runs fewer instructions
a second than a Python loop, so quote ratios between versions of one step, not between steps.
About 1 minute per case and side under valgrind (``--quick``: the 10k-node cases only).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate_models

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(tempfile.gettempdir()) / "deploylens-bench"

# Each case: setup code (its instructions are subtracted), then the step measured. ``MODEL``
# and ``TRACE`` are filled in; the snippets use only names every recent checkout has.
IR = "from deploylens.core.graph.ir import build_model_ir\nimport onnx\nm = onnx.load(MODEL)\n"
SUMMARY = (
    "from deploylens.core.model.loading import read_model\n"
    "from deploylens.core.model.summary import summarize\nm = read_model(MODEL)\n"
)
COLUMNS = (
    "from deploylens.core.trace import chrome\n"
    "events = chrome.decode_events(open(TRACE, 'rb').read())\n"
)
CASES = {
    "graph IR, {n} nodes": (IR, "build_model_ir(m)"),
    "graph IR, {n} nodes, every tensor declared": (IR, "build_model_ir(m)"),
    "summary (inspect, unchecked), {n} nodes": (SUMMARY, "summarize(m, MODEL, check=False)"),
    "trace chunk to columns, 100k events": (COLUMNS, "chrome.chunk_columns(events)"),
    "trace decode, 100k events": (
        "from deploylens.core.trace import chrome\ndata = open(TRACE, 'rb').read()\n",
        "chrome.decode_events(data)",
    ),
    "trace import, 100k events": (
        "from deploylens.core.trace.load import load_trace\n",
        "load_trace(TRACE)",
    ),
}


def models(nodes: int) -> dict[str, Path]:
    """The case's inputs, made once and cached: a transformer-like graph (one module path per
    layer: the hierarchy's worst case), the same with every tensor declared (what a dynamo
    export or a shape-inferred model holds), and 100k events of a synthetic Kineto trace."""
    import onnx

    CACHE.mkdir(parents=True, exist_ok=True)
    plain = generate_models.transformer_like(CACHE / f"tl_{nodes}.onnx", nodes)
    declared = CACHE / f"tl_{nodes}_declared.onnx"
    if not declared.exists():
        inferred = onnx.shape_inference.infer_shapes(onnx.load(str(plain)))
        generate_models.save(inferred, declared)
    chunk = CACHE / "chunk_100k.json"
    if not chunk.exists():
        sys.path.insert(0, str(ROOT))  # synthetic traces live with the tests
        from deploylens.core.files import atomic_write_bytes
        from deploylens.core.trace.export import write_chrome
        from tests.helpers.synthetic_trace import make_trace

        whole = write_chrome(make_trace(100_000, lanes=16), CACHE / "chunk_100k.full.json")
        # the events' own lines (one per line, as written), so the times keep their text
        lines = [line.rstrip(b",") for line in whole.read_bytes().splitlines()]
        events = [line for line in lines if line.startswith(b'{"ph"')]
        atomic_write_bytes(chunk, b"[" + b",\n".join(events) + b"]")
        whole.unlink()
    return {"plain": plain, "declared": declared, "trace": chunk}


def counted(code: str, env: dict[str, str]) -> int:
    """Instructions callgrind counted for ``python -c code`` (the whole process)."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", code],
        env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if out.returncode or found is None:
        raise SystemExit(f"callgrind failed ({out.returncode}): {out.stderr[-800:]}")
    return int(found.group(1))


def step_instructions(setup: str, step: str, env: dict[str, str]) -> int:
    return counted(setup + step, env) - counted(setup, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k-node models")
    parser.add_argument("--ours-from", type=Path, help="PYTHONPATH of the 'before' side")
    parser.add_argument("--only", default="", help="cases whose name contains this text")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    nodes = 10_000 if args.quick else 100_000
    inputs = models(nodes)
    sides = {"this checkout": dict(os.environ)}
    if args.ours_from:
        sides = {"before": {**os.environ, "PYTHONPATH": str(args.ours_from)}, **sides}
    rows = []
    print(f"{'case':46s} " + " ".join(f"{side:>16s}" for side in sides) + "   after/before")
    for template, (setup, step) in CASES.items():
        name = template.format(n=f"{nodes:,}")
        if args.only not in name:
            continue
        model = inputs["declared" if "declared" in name else "plain"]
        filled = f"MODEL = {str(model)!r}\nTRACE = {str(inputs['trace'])!r}\n" + setup
        found = {side: step_instructions(filled, step, env) for side, env in sides.items()}
        values = list(found.values())
        ratio = values[-1] / values[0] if len(values) > 1 else None
        rows.append({"case": name, "instructions": found, "after_over_before": ratio})
        line = f"{name:46s} " + " ".join(f"{v / 1e9:15.3f}G" for v in values)
        print(line + (f"   {ratio:.3f}" if ratio is not None else ""))
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
