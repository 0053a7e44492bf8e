"""Run fuzz cases and judge every ending. Usually started by tests/core/test_fuzz.py as

    python -m tests.fuzz.runner --classes inspect,trace --cases 300 --seed 17 --json out.json

in a process whose address space is capped (``--memory-gb``): a case that allocates its way to
a MemoryError is a failure, not a dead machine. Each case gets ``--case-seconds`` (SIGALRM: a
blocking open or read is interrupted too). The JSON report has counts per class and outcome and
every failure with its mutation, so a failure is reproducible from (class, seed, index).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.cases import CLASSES, MARKER, Case, marker_dir, write_case

# "deploylens: error: Fail: …": a library's exception class as the user's sentence
RAW_SENTENCE = re.compile(r"deploylens: error: [A-Z]\w*(Error|Exception|Fail|Graph|Argument)\b:")


class CaseTimeout(BaseException):
    """Raised by SIGALRM: a case that hangs (BaseException, so no ``except Exception`` eats it)."""


def _alarm(*_: object) -> None:
    raise CaseTimeout()


def _cached_matrix() -> None:
    """``support`` collects its registries in a worker per call (~1 s); the fuzz targets the
    model side, so the real matrix is collected once and handed to every case."""
    from deploylens.core.support import loader

    matrix = loader.load_matrix()
    loader.load_matrix = lambda python=None, refresh=False: matrix


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _names_file(line: str, case: Case) -> bool:
    return any(name[:40] in line for name in case.names)


def run_cli(case: Case, folder: Path) -> tuple[str, str]:
    """(outcome, detail): ok | verdict | error | fail."""
    from deploylens.core.cli import main

    argv = [a.replace("{dir}", str(folder)) for a in case.argv or []]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except CaseTimeout:
        raise
    except SystemExit as exc:  # argparse
        return "fail", f"SystemExit({exc.code}): {err.getvalue()[-300:]}"
    except BaseException:
        return "fail", traceback.format_exc()[-2500:]
    stderr = err.getvalue()
    if "Traceback" in stderr:
        return "fail", stderr[-2500:]
    if code == 0:
        return "ok", ""
    if code != 1:
        return "fail", f"exit {code}: {stderr[-300:]}"
    line = _first_line(stderr)
    if RAW_SENTENCE.match(line):
        return "fail", f"a raw exception as the sentence: {line}"
    if line.startswith("deploylens: error: "):
        if _names_file(line, case) or not case.names:
            return "error", line
        return "fail", f"the sentence names no input file: {line}"
    if not stderr.strip() and out.getvalue().strip():
        return "verdict", _first_line(out.getvalue())  # a negative report (problems, FAIL)
    return "fail", f"exit 1 without a sentence: {stderr[-300:]!r}"


def _holding(folder: Path, secret: bytes) -> list[str]:
    """Files the case wrote (links left out: they are the bait) that hold ``secret``."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.name != "secret.bin":
            try:
                if secret[:24] in path.read_bytes():
                    found.append(path.name)
            except OSError:
                continue
    return found


def run_call(case: Case, folder: Path) -> tuple[str, str]:
    from deploylens.core.errors import UserError

    try:
        if case.call == "validate_inputs":
            from deploylens.core.validate.run import validate_outputs
            from deploylens.core.validate.tolerances import Tolerances

            validate_outputs(
                case.args["model"], None, str(folder / case.args["inputs"]), Tolerances()
            )
        elif case.call == "torch_source":
            from deploylens.core.pytorch.source import (
                InputSpec,
                ModelSource,
                load_model,
                parse_spec,
            )

            source: ModelSource = parse_spec(str(folder / case.args["path"]))
            source.inputs = [InputSpec("x", [1, 4])]  # what the CLI's --input gives
            load_model(source)
        elif case.call == "hf_load":
            from deploylens.core.pytorch.huggingface import load_hf

            load_hf(str(folder / case.args["folder"]))
        elif case.call == "input_spec":
            problem = _drawn_outside(case.args["spec"])
            if problem:
                return "fail", problem
        elif case.call == "project":
            from deploylens.core.project import load_project

            load_project(folder / case.args["path"])
        elif case.call == "registry":
            from deploylens.core.support.analysis import analyze, parse_target
            from deploylens.core.support.collect import read_registries
            from deploylens.core.support.matrix import SupportMatrix

            matrix = SupportMatrix(read_registries(folder / case.args["path"]))
            import onnx

            model = onnx.load(str(folder / case.args["model"]))
            analyze(model, matrix, [parse_target("trt-10.1"), parse_target("ort-cpu")])
        elif case.call == "measured":
            from deploylens.core.support.measure import predict, read_measured, version_set

            data = read_measured(folder / case.args["path"], version_set(False))
            import onnx

            predict(onnx.load(str(SAMPLE)), data, "trt-build")
        elif case.call == "small_bounds_trace":
            _small_bounds()
            from deploylens.core.trace.load import load_trace
            from deploylens.core.trace.stats import trace_stats

            trace_stats(load_trace(folder / case.args["path"]))
            left = _import_workers_left()
            if left:
                return "fail", f"import workers left running: {left}"
        else:
            return "fail", f"unknown call {case.call}"
    except CaseTimeout:
        raise
    except UserError as exc:
        if _names_file(exc.message, case):
            return "error", exc.message
        return "fail", f"the sentence names no input file: {exc.message}"
    except BaseException:
        return "fail", traceback.format_exc()[-2500:]
    return "ok", ""


SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "small_cnn.dynamo.onnx"


def _drawn_outside(text: str) -> str:
    """A spec parsed and drawn as export draws it: "" when every value lies in its range, else
    what lies outside (a wrapped int8, an overflowed float16)."""
    from deploylens.core.pytorch.source import ModelSource, make_inputs, parse_input

    spec = parse_input(text)
    (drawn,) = make_inputs(ModelSource("python", "x.py", inputs=[spec]))
    values = drawn.double()
    if not bool(values.isfinite().all()):
        return f"{text}: drew a value that is not finite"
    if spec.low is not None and spec.high is not None and spec.dtype != "bool":
        least, most = float(values.min()), float(values.max())
        if least < spec.low - 1e-6 * abs(spec.low) or most > spec.high + 1e-6 * abs(spec.high):
            return f"{text}: drew {least:g}..{most:g}, outside the range given"
    return ""


def _small_bounds() -> None:
    """The trace readers' bounds at a fuzz case's scale: an event may run 1 MB, files from 2 MB
    take the parallel reader in 512 KB pieces — the paths GB-size files take."""
    from deploylens.core.trace import chrome_parallel, json_stream

    json_stream.MAX_EVENT = chrome_parallel.MAX_EVENT = 1 << 20
    chrome_parallel.PARALLEL_FROM, chrome_parallel.PIECE = 2 << 20, 512 << 10
    chrome_parallel.TAIL = 64 << 10


def _import_workers_left() -> list[int]:
    from deploylens.core.worker.reaper import command_line, descendants

    return [pid for pid in descendants(os.getpid()) if b"import_workers" in command_line(pid)]


CURRENT = os.environ.get("DEPLOYLENS_FUZZ_CURRENT", "")


def run_case(case: Case, root: Path, seconds: float) -> dict[str, Any]:
    """One case in a fresh folder; the case about to run is written to ``CURRENT`` first, so a
    native crash of the whole process still names its case."""
    if CURRENT:
        Path(CURRENT).write_text(json.dumps({"case": case.name, "mutation": case.mutation,
                                             "argv": case.argv, "call": case.call}))  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix=f"{case.name}-", dir=root))
    started = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        write_case(case, folder)
        outcome, detail = run_cli(case, folder) if case.argv else run_call(case, folder)
    except CaseTimeout:
        outcome, detail = "fail", f"hang: more than {seconds:g} s"
    except MemoryError:
        outcome, detail = "fail", "MemoryError"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        leaked = _holding(folder, case.secret) if case.secret else []
        shutil.rmtree(folder, ignore_errors=True)
    if leaked:
        outcome, detail = "fail", f"bytes from outside the model's folder were read into {leaked}"
    markers = list(marker_dir().glob(f"{MARKER}*"))
    if markers:
        outcome, detail = "fail", f"a hostile pickle ran: {[m.name for m in markers]}"
        for marker in markers:
            marker.unlink()
    return {
        "class": case.kind,
        "case": case.name,
        "mutation": case.mutation,
        "outcome": outcome,
        "detail": detail,
        "seconds": round(time.perf_counter() - started, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", default=",".join(CLASSES))
    parser.add_argument("--cases", type=int, default=100, help="per class")
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--case-seconds", type=float, default=20.0)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    root = Path(tempfile.mkdtemp(prefix="deploylens-fuzz-"))
    markers = root / "markers"
    markers.mkdir()
    os.environ["DEPLOYLENS_FUZZ_MARKERS"] = str(markers)
    results: list[dict[str, Any]] = []
    try:
        classes = [c for c in args.classes.split(",") if c]
        if "support" in classes:
            _cached_matrix()
        for number, kind in enumerate(classes):
            rng = np.random.default_rng([args.seed, number, len(kind)])
            for case in CLASSES[kind](args.cases, rng):
                results.append(run_case(case, root, args.case_seconds))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    counts: dict[str, dict[str, int]] = {}
    for row in results:
        counts.setdefault(row["class"], Counter())[row["outcome"]] += 1
    report = {
        "seed": args.seed,
        "cases": len(results),
        "counts": {k: dict(v) for k, v in counts.items()},
        "slowest": sorted(results, key=lambda r: -r["seconds"])[:5],
        "failures": [r for r in results if r["outcome"] == "fail"],
        "sentences": sorted({r["detail"][:160] for r in results if r["outcome"] == "error"}),
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    for kind, outcome in report["counts"].items():
        print(f"{kind:10s} " + ", ".join(f"{k} {v}" for k, v in sorted(outcome.items())))
    for failure in report["failures"][:20]:
        print(f"FAIL {failure['case']} ({failure['mutation']}): {failure['detail'][-600:]}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
