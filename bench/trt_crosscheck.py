"""Cross-check: how often does onnx-tensorrt's 10.1 operator table (DeployLens's static TensorRT
verdict) agree with the real TensorRT-RTX parser over the onnx backend node tests — and every
class of disagreement, with counts and an example each.

    python bench/trt_crosscheck.py [--json PATH] [--limit N]

The two are different products (TensorRT 10.1's table; TensorRT-RTX 1.x's parser, which is
newer), so disagreement is expected; the classes say where the table is out of date, where its
type column is read too strictly, and what the live parser refuses that no table says. Where the
live parser is installed, DeployLens's model analysis uses it (``deploylens support`` defaults to
trt-rtx; the panel's default target).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import measured_here

ARTIFACTS = Path(
    os.environ.get("DEPLOYLENS_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "shared" / "artifacts"
)
TABLE = "trt-10.1"


def table_class(reasons: list[str]) -> str:
    """Why the table blocks a model, as a class."""
    kinds = set()
    for reason in reasons:
        if "parses opsets" in reason:
            kinds.add("the model's opset is outside the table's range (9–20)")
        elif re.search(r"supports \w+ for .*, not ", reason):
            kinds.add("a tensor type the table's type column does not list")
        elif "not in TensorRT" in reason or "does not support" in reason:
            kinds.add("the op is missing or marked unsupported in the table")
        elif "reads only the default domain" in reason or "needs a plugin" in reason:
            kinds.add("another domain (needs a plugin)")
        else:
            kinds.add("other: " + reason[:60])
    return " + ".join(sorted(kinds))


def live_class(finding: dict[str, Any]) -> str:
    """Why the live parser rejects a model the table accepts, as a class."""
    message = finding["message"]
    for needle, label in (
        ("build-time constant", "an input the parser needs as a build-time constant (axes, …)"),
        ("Plugin not found", "no importer (it looked for a plugin)"),
        ("than 1 outputs", "an optional output the importer does not produce"),
        ("half_pixel", "a Resize mode the importer does not implement"),
        ("Antialias", "a Resize mode the importer does not implement"),
        ("keep_aspect_ratio", "a Resize mode the importer does not implement"),
        ("axesInterlacing", "a Resize mode the importer does not implement"),
        ("training_mode", "training-mode attributes"),
        ("data type", "a tensor type TensorRT cannot hold (optional, uint64 …)"),
        ("shape tensor", "a shape input of the wrong type"),
        ("Shape Error", "a shape the network cannot compute"),
        ("Internal Error", "an internal error in shape analysis"),
        ("reduction", "an unsupported attribute value"),
        ("Unsupported", "an unsupported attribute value"),
    ):
        if needle.lower() in message.lower():
            return label
    return "other: " + message[:60]


def crosscheck(limit: int | None = None) -> dict[str, Any]:
    import tensorrt_rtx

    from deploylens.core.jobs import run_job
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.analysis import analyze, parse_target
    from deploylens.core.support.matrix import SupportMatrix
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    matrix = SupportMatrix.load(run_job("support.collect").path)
    target = parse_target(TABLE)
    models = sorted((ARTIFACTS / "onnx-pip-1.21.0-backend-test-data" / "node").glob("*/model.onnx"))
    models = models[:limit]
    classes: dict[str, collections.Counter[str]] = {
        "table blocks, live parser accepts": collections.Counter(),
        "table accepts, live parser rejects": collections.Counter(),
    }
    examples: dict[str, str] = {}
    agree = 0
    with measured_here() as span:  # wall and CPU seconds of the whole comparison
        for path in models:
            (report,) = analyze(read_model(path), matrix, [target])
            live = TensorRTAdapter(tensorrt_rtx).probe(str(path))
            if report.ok == live["supported"]:
                agree += 1
                continue
            if live["supported"]:
                side = "table blocks, live parser accepts"
                label = table_class([b.reason for b in report.blockers])
            else:
                side = "table accepts, live parser rejects"
                finding = live["findings"][0] if live["findings"] else {"message": "no error"}
                label = live_class(finding)
            classes[side][label] += 1
            examples.setdefault(f"{side}: {label}", path.parent.name)
    return {
        "models": len(models),
        "agree": agree,
        "agreement": agree / max(len(models), 1),
        "seconds": span.wall_s,
        "cpu_seconds": span.cpu_s,
        "table": TABLE,
        "live": f"TensorRT-RTX {tensorrt_rtx.__version__}",
        "classes": {side: dict(counter.most_common()) for side, counter in classes.items()},
        "examples": examples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    result = crosscheck(args.limit)
    print(
        f"{result['table']} table vs {result['live']}'s parser on {result['models']} backend node "
        f"tests: {result['agree']} agree ({result['agreement']:.1%}), {result['seconds']:.1f} s "
        f"wall, {result['cpu_seconds']:.1f} s CPU"
    )
    for side, counter in result["classes"].items():
        print(f"\n{side}: {sum(counter.values())}")
        for label, count in counter.items():
            print(f"  {count:5d}  {label}  (e.g. {result['examples'][f'{side}: {label}']})")
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
