"""Honest cross-check: does the support matrix's "ONNX Runtime CPU can run this model" agree with
reality (a session created and run on the bundled inputs) over the onnx backend node tests?

    python bench/support_crosscheck.py [--json PATH] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# ../shared/artifacts beside the checkout, or where DEPLOYLENS_ARTIFACTS says (as the tests).
ARTIFACTS = Path(
    os.environ.get("DEPLOYLENS_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "shared" / "artifacts"
)


def predict(path: Path, matrix) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.analysis import analyze, parse_target

    model = read_model(path)
    (report,) = analyze(model, matrix, [parse_target("ort-cpu")])
    reason = "; ".join(f"{b.op}: {b.reason}" for b in report.blockers)
    return report.ok, reason


def reality(path: Path) -> tuple[bool, str]:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return False, str(exc).strip().splitlines()[0][:300]
    try:
        feeds = {}
        inputs = session.get_inputs()
        data_dir = path.parent / "test_data_set_0"
        for index, meta in enumerate(inputs):
            pb = data_dir / f"input_{index}.pb"
            if not pb.exists():
                break
            tensor = onnx.TensorProto()
            tensor.ParseFromString(pb.read_bytes())
            feeds[meta.name] = numpy_helper.to_array(tensor)
        if len(feeds) != len(inputs):
            return True, "session created (inputs are sequences/optionals: not run)"
    except Exception as exc:  # the harness cannot build the input (a dtype numpy lacks)
        return True, f"session created; inputs not buildable here: {str(exc)[:120]}"
    try:
        session.run(None, feeds)
    except Exception as exc:
        text = str(exc).strip().splitlines()[0]
        if "Numpy_type" in text or "No corresponding Numpy type" in text or "reshape" in text:
            # the Python binding cannot feed this dtype: a harness limit, the kernels loaded
            return True, f"session created; the Python binding cannot feed the inputs: {text[:120]}"
        return False, text[:300]
    del np
    return True, ""


def crosscheck(matrix, limit: int | None = None, stride: int = 1) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """``stride``: every Nth model by name (a fixed sample across all ops, for quick runs)."""
    models = sorted(
        (ARTIFACTS / "onnx-pip-1.21.0-backend-test-data" / "node").glob("*/model.onnx")
    )[:limit][::stride]
    misses = []
    harness_limited = []
    started = time.perf_counter()
    for path in models:
        predicted, why = predict(path, matrix)
        actual, error = reality(path)
        if actual and error:
            harness_limited.append(path.parent.name)
        if predicted != actual:
            misses.append(
                {
                    "model": path.parent.name,
                    "predicted": predicted,
                    "actual": actual,
                    "prediction_reason": why,
                    "ort_error": error,
                }
            )
    agree = len(models) - len(misses)
    return {
        "models": len(models),
        "agree": agree,
        "agreement": agree / max(len(models), 1),
        "seconds": time.perf_counter() - started,
        "misses": misses,
        "session_only": harness_limited,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    from deploylens.core.jobs import run_job
    from deploylens.core.support.matrix import SupportMatrix

    matrix = SupportMatrix.load(run_job("support.collect").path)
    result = crosscheck(matrix, args.limit)
    print(
        f"ORT CPU prediction vs reality on {result['models']} backend node tests: "
        f"{result['agree']} agree ({result['agreement']:.2%}), {result['seconds']:.1f} s"
    )
    print(
        f"  {len(result['session_only'])} models counted as running on session creation alone: "
        "their inputs use dtypes the Python binding cannot feed (float8, int4, ...)"
    )
    for miss in result["misses"]:
        print(
            f"  {miss['model']}: predicted {miss['predicted']}, actual {miss['actual']}"
            f" | {miss['prediction_reason'][:120]} | {miss['ort_error'][:160]}"
        )
    if args.json:
        from deploylens.core.files import write_json

        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
