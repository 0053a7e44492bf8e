"""The measured support matrix: how long probing takes, and how often its predictions are right.

    python bench/support_measured.py [--quick] [--json PATH] [--limit N]

1. Probe: every op × schema version × input type of ai.onnx and ai.onnx.ml generated from the
   schemas, asked of TensorRT-RTX (parse + ahead-of-time build) and ONNX Runtime CPU (session +
   run) in a worker, into an empty cache: time, probes by domain, states, cache size, warm load.
2. Prediction vs reality on the ONNX backend node tests (``../shared/artifacts``): the measured
   cells' verdict on each model (TensorRT-RTX parse, TensorRT-RTX build, ONNX Runtime run) vs a
   real parse/build of the file and a real ONNX Runtime run on its own inputs. Targets (issue 34):
   TensorRT-RTX ≥ 98 %, ONNX Runtime ≥ 99.5 %; every disagreement listed with its cells. The
   probes take their attributes from ONNX's generators of these same tests, so each figure is
   also given "held out": every case predicted with the attribute variants made from it left
   out — the figure to quote.
3. Documented vs measured: onnx-tensorrt's 10.1 table against the measured TensorRT-RTX cell for
   the same op, opset and type, each difference by class.

``--quick`` probes the fixed op sample; models using other ops then have no prediction and
are counted as such, never as agreement. ``--ci`` is what CI runs: one backend test per op
type (every op class judged), only the cells those tests use probed (with their attribute
variants), and the held-out targets checked — the run exits 1 when one is missed, as the full
run does. A build's reality is given the test's own input values as its profile, as every probe
and every DeployLens build of a model with a shape input is.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the package is imported after the cache folder is chosen
    from deploylens.core.support.measured_types import MeasuredMatrix

ARTIFACTS = Path(
    os.environ.get("DEPLOYLENS_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "shared" / "artifacts"
)
NODE_TESTS = ARTIFACTS / "onnx-pip-1.21.0-backend-test-data" / "node"
TABLE = "10.1"


def probe(quick: bool, reuse: bool) -> tuple[MeasuredMatrix, dict[str, Any]]:
    from deploylens.core.support.measure import cache_path, load_measured

    data = load_measured(quick, refresh=not reuse)
    loads = []
    for _ in range(5):
        started = time.perf_counter()
        load_measured(quick)
        loads.append(time.perf_counter() - started)
    domains = collections.Counter(k.split("::")[0] for k in data.trt.cells)
    figures = {
        "seconds": data.seconds,
        "probes": sum(domains.values()),
        "by_domain": dict(domains),
        "not_probed": len(data.unprobed),
        "attribute_variants": len(data.trt.variants),
        "tensorrt_rtx": dict(data.trt.states()),
        "ort_cpu": dict(data.ort.states()),
        "cache_mb": cache_path(quick).stat().st_size / 1e6,
        "warm_load_s": statistics.median(loads),
    }
    return data, figures


def ort_reality(path: Path) -> tuple[bool, str]:
    """A session and one run on the test's own inputs, as the probes ran: outputs stay
    OrtValues, and inputs of a type the Python API cannot take (bfloat16, float8) leave it
    at a session that loads."""
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper

    from deploylens.core.support.probes import PLAIN_NUMPY
    from deploylens.core.trt.cells import run_once

    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feeds = {}
        for index, given in enumerate(session.get_inputs()):
            tensor = TensorProto()
            data = path.parent / "test_data_set_0" / f"input_{index}.pb"
            tensor.ParseFromString(data.read_bytes())
            feeds[given.name] = numpy_helper.to_array(tensor)
        if any(f.dtype.type not in PLAIN_NUMPY and f.dtype != object for f in feeds.values()):
            return True, ""
        run_once(ort, session, feeds)
    except Exception as exc:
        text = str(exc).strip()
        return False, text.splitlines()[0][:160] if text else repr(exc)
    return True, ""


def test_feeds(path: Path) -> dict[str, Any]:
    """A backend test's own input values by input name (what its build's profile is made of,
    as the probes' were: a shape input needs its values in a profile)."""
    import onnx
    from onnx import TensorProto, numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = {}
    for index, name in enumerate(names):
        data = path.parent / "test_data_set_0" / f"input_{index}.pb"
        if not data.is_file():
            break
        tensor = TensorProto()
        try:  # a sequence or optional input is no tensor: no profile value for it
            tensor.ParseFromString(data.read_bytes())
            feeds[name] = numpy_helper.to_array(tensor)
        except Exception:
            continue
    return feeds


def generated_node_tests(folder: Path) -> Path:
    """The backend node tests written from the installed onnx's own case generators (what the
    artifacts' copy was made from), in the same layout — for a checkout with no
    ``../shared/artifacts`` beside it, as CI's may be."""
    import contextlib
    import io
    import warnings

    import numpy as np
    from onnx import numpy_helper
    from onnx.backend.test.case import node as cases

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # the generators' own overflow warnings
        every = cases.collect_testcases()
    for case in every:
        if case.model is None or not case.data_sets:
            continue
        model = case.model
        model.ir_version = min(model.ir_version, 13)  # what ONNX Runtime 1.3x reads
        home = folder / case.name
        data = home / "test_data_set_0"
        data.mkdir(parents=True, exist_ok=True)
        (home / "model.onnx").write_bytes(model.SerializeToString())
        for index, value in enumerate(case.data_sets[0][0]):
            if isinstance(value, np.ndarray | np.generic):
                tensor = numpy_helper.from_array(np.asarray(value))
                (data / f"input_{index}.pb").write_bytes(tensor.SerializeToString())
    return folder


def ci_sample(root: Path) -> list[Path]:
    """One backend node test per op type (the first by name): every op class is judged."""
    import onnx

    chosen: dict[tuple[str, str], Path] = {}
    for path in sorted(root.glob("*/model.onnx")):
        for node in onnx.load(str(path), load_external_data=False).graph.node:
            chosen.setdefault((node.domain, node.op_type), path)
    return sorted(set(chosen.values()))


def ci_probe(sample: list[Path]) -> MeasuredMatrix:
    """Only the cells ``sample`` uses, with their families' attribute variants, measured in a
    worker as the full probe measures them (the full probe is 10k probes: minutes on CI)."""
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.measure import _family_key, _run, model_cells, version_set
    from deploylens.core.support.probes import generate

    needed = {use.key for path in sample for use in model_cells(read_model(path))}
    families = {_family_key(key) for key in needed}
    ops = {key.split("::")[1] for key in needed}
    keys = sorted(
        probe.key
        for probe in generate(ops).probes
        if probe.key.split("@")[0] in needed or _family_key(probe.key.split("@")[0]) in families
    )
    started = time.perf_counter()
    data = _run(keys, [], None, None)
    data.versions = version_set(False)
    data.seconds = time.perf_counter() - started
    return data


def agreement(
    data: MeasuredMatrix, limit: int | None, models: list[Path] | None = None
) -> dict[str, Any]:
    import tensorrt_rtx

    from deploylens.core.model.loading import read_model
    from deploylens.core.support.measure import FOREIGN_STATE, TARGET_CC, predict
    from deploylens.core.trt.cells import classify, quiet_stderr
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    adapter = TensorRTAdapter(tensorrt_rtx)
    models = models if models is not None else sorted(NODE_TESTS.glob("*/model.onnx"))[:limit]
    levels = ("trt-parse", "trt-build", "ort-run")
    # "-held-out": each case predicted with the attribute variants made from it left out (the
    # probes and these tests come from the same ONNX generators: this is the honest figure)
    tallies: dict[str, collections.Counter[str]] = {
        k + mode: collections.Counter() for k in levels for mode in ("", "-held-out")
    }
    disagreements: dict[str, list[dict[str, str]]] = {k: [] for k in tallies}
    foreign: list[str] = []  # nodes answered in another library's states: a bug, never a guess
    started = time.perf_counter()
    for path in models:
        model = read_model(path)
        with quiet_stderr():
            real = classify(adapter.try_model(path.read_bytes(), [TARGET_CC], test_feeds(path)))
        ort_ok, ort_why = ort_reality(path)
        held_out = frozenset({path.parent.name})
        guesses = {level: predict(model, data, level) for level in levels}
        guesses.update(
            {f"{level}-held-out": predict(model, data, level, held_out) for level in levels}
        )
        foreign += [f"{path.parent.name} ({name}): {n.node} {n.message[:80]}"
                    for name, guessed in guesses.items() for n in guessed.not_measured
                    if n.message.startswith(FOREIGN_STATE)]  # fmt: skip
        if real.state == "needs-gpu":  # the parser wanted a CUDA driver: no answer here
            for name in tallies:
                tallies[name]["no reality (the parser needs a GPU)"] += 1
            continue
        cases = (
            ("trt-parse", real.state not in ("parse-fails",), real.message),
            ("trt-build", real.state == "builds", real.message),
            ("ort-run", ort_ok, ort_why),
        )
        cases += tuple((f"{name}-held-out", truth, said) for name, truth, said in cases)
        for name, truth, said in cases:
            guessed = guesses[name]
            guess = guessed.ok
            if guess is None:
                tallies[name]["no prediction"] += 1
                continue
            tallies[name]["agree" if guess == truth else "disagree"] += 1
            if guess != truth:
                cells = [f"{n.cell} {n.state}" for n in guessed.blocked][:3]
                disagreements[name].append(
                    {"model": path.parent.name, "predicted": "ok" if guess else "fails",
                     "cells": "; ".join(cells) or "all cells ok", "reality": said[:160]}
                )  # fmt: skip
    result: dict[str, Any] = {"models": len(models), "seconds": time.perf_counter() - started,
                              "foreign_states": foreign}  # fmt: skip
    for name, tally in tallies.items():
        judged = tally["agree"] + tally["disagree"]
        result[name] = {
            **dict(tally),
            "agreement": tally["agree"] / judged if judged else None,
            "disagreements": disagreements[name],
        }
    return result


def elsewhere(data: MeasuredMatrix) -> dict[str, Any]:
    """The same prediction on models no probe came from: every other ONNX file of
    ``../shared/artifacts`` (Polygraphy's and TensorRT's test models, onnxruntime-extensions'
    …), against a real TensorRT-RTX parse and build of each. A file that does not load, keeps
    its weights outside, or whose build needs what a plain build cannot give (a profile for a
    dynamic input, a GPU) has no reality here and is counted as such."""
    import tensorrt_rtx

    from deploylens.core.errors import UserError
    from deploylens.core.model.loading import read_model
    from deploylens.core.support.measure import TARGET_CC, predict
    from deploylens.core.trt.cells import classify, quiet_stderr
    from deploylens.core.trt.tensorrt_adapter import TensorRTAdapter

    adapter = TensorRTAdapter(tensorrt_rtx)
    paths = sorted(p for p in ARTIFACTS.rglob("*.onnx") if NODE_TESTS.parent not in p.parents)
    tallies = {k: collections.Counter[str]() for k in ("trt-parse", "trt-build")}
    misses: dict[str, list[str]] = {k: [] for k in tallies}
    for path in paths:
        try:
            model = read_model(path)
        except (UserError, OSError, ValueError) as exc:
            for tally in tallies.values():
                tally["does not load"] += 1
            del exc
            continue
        if any(t.data_location == 1 for t in model.graph.initializer):
            for tally in tallies.values():
                tally["weights outside the file"] += 1
            continue
        with quiet_stderr():
            real = classify(adapter.try_model(path.read_bytes(), [TARGET_CC]))
        truths = {
            "trt-parse": None if real.state == "needs-gpu" else real.state != "parse-fails",
            "trt-build": real.state == "builds"
            if real.state in ("builds", "build-fails", "parse-fails") else None,
        }  # fmt: skip
        for level, truth in truths.items():
            guess = predict(model, data, level).ok
            if truth is None:
                tallies[level]["no reality (" + real.state + ")"] += 1
            elif guess is None:
                tallies[level]["no prediction"] += 1
            else:
                tallies[level]["agree" if guess == truth else "disagree"] += 1
                if guess != truth:
                    name = str(path.relative_to(ARTIFACTS))
                    misses[level].append(f"{name}: predicted {guess}, real {real.state}")
    result: dict[str, Any] = {"models": len(paths)}
    for level, tally in tallies.items():
        judged = tally["agree"] + tally["disagree"]
        result[level] = {**dict(tally), "agreement": tally["agree"] / judged if judged else None,
                         "disagreements": misses[level]}  # fmt: skip
    return result


def documented(data: MeasuredMatrix) -> dict[str, Any]:
    """The 10.1 table's cell vs the measured TensorRT-RTX cell, by class of difference."""
    from deploylens.core.jobs import run_job
    from deploylens.core.model.dtypes import element_type_name
    from deploylens.core.support.matrix import YES, SupportMatrix
    from deploylens.core.support.probes import Cell, _elem_type

    matrix = SupportMatrix.load(run_job("support.collect").path)
    classes: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    same = 0
    for key, said in data.trt.cells.items():
        cell = Cell.from_key(key)
        if cell.domain or cell.dtype == "none":
            continue
        try:
            dtype = element_type_name(_elem_type(cell.dtype))
        except ValueError:
            continue
        table = matrix.trt_verdict("", cell.op, cell.since, TABLE, [dtype])
        measured_ok = said.state == "builds"
        if (table.status == YES) == measured_ok:
            same += 1
            continue
        reason, message = table.reason, said.message
        if measured_ok:
            if "parses opsets" in reason:
                label = "documented outside the opset range; the parser reads it"
            elif "supports" in reason and ", not " in reason:
                label = "a type the table's column omits; the parser builds it"
            else:
                label = "documented unsupported; the newer parser builds it"
        elif said.state == "build-fails":
            label = "documented; parses, the builder refuses"
        elif "convert ONNX date type" in message or "unsupported input type" in message:
            label = "documented; the parser refuses the type"
        elif "build-time constant" in message or "initializer" in message:
            label = "documented; the parser needs a constant input"
        else:
            label = "documented; a restriction the parser enforces"
        classes[label] += 1
        examples.setdefault(label, f"{key}: {(reason or message)[:140]}")
    return {
        "table": TABLE,
        "compared": same + sum(classes.values()),
        "same": same,
        "classes": dict(classes.most_common()),
        "examples": examples,
    }


TARGETS = (("trt-parse", 0.98), ("trt-build", 0.98), ("ort-run", 0.995))


def below_target(misses: int, judged: int, target: float) -> float:
    """P(at least ``misses`` disagreements in ``judged`` models) were the agreement exactly
    ``target``: the chance a sample this bad comes from a predictor that meets it."""
    miss = 1.0 - target

    def log_term(k: int) -> float:  # log of the binomial term, so a 1,600-model run stays finite
        return (math.lgamma(judged + 1) - math.lgamma(k + 1) - math.lgamma(judged - k + 1)
                + k * math.log(miss) + (judged - k) * math.log1p(-miss))  # fmt: skip

    return min(1.0, sum(math.exp(log_term(k)) for k in range(misses, judged + 1)))


CONFIDENCE = 0.05  # the CI sample fails a target it shows missed at 95 % confidence


def judge(found: dict[str, Any], judged: bool, sample: bool = False) -> list[str]:
    """Prints every row against its target; returns the held-out rows that miss theirs (the
    figures to quote) where the run is one that judges them. On the CI sample (one test per op
    type: a few per cent per model) a row misses when the sample shows at 95 % confidence that
    agreement is below the target — the class errors this gate is for (a target's cells in
    another library's states: ONNX Runtime 83.5 %) fail it, one unlucky model does not."""
    missed = []
    foreign = found.get("foreign_states") or []
    if foreign:  # a target judged in another's words is a bug whatever the rates say
        print(f"  {len(foreign)} node answer(s) in another library's states, e.g. {foreign[0]}")
        missed.append(f"{len(foreign)} node answer(s) in another library's states")
    for name, target in [*TARGETS, *((n + "-held-out", t) for n, t in TARGETS)]:
        row = found[name]
        rate = row["agreement"]
        verdict = "—" if rate is None else ("PASS" if rate >= target else "FAIL")
        count = row.get("agree", 0) + row.get("disagree", 0)
        chance = below_target(row.get("disagree", 0), count, target) if count and sample else 0.0
        if sample and rate is not None:
            verdict = "PASS" if chance >= CONFIDENCE else "FAIL"
            verdict += f" (p {chance:.2f} that a predictor at the target does this badly)"
        if not judged:  # the target is judged on every model (or the CI sample), fully probed
            verdict = "(not judged: a sample)"
        elif name.endswith("-held-out") and (
            rate is None or (chance < CONFIDENCE if sample else rate < target)
        ):
            missed.append(f"{name} {'—' if rate is None else f'{rate:.1%}'} < {target:.1%}")
        shown = "—" if rate is None else f"{rate:.1%}"
        print(f"  {name:19s} agree {row.get('agree', 0):5d}  disagree "
              f"{row.get('disagree', 0):4d}  no prediction {row.get('no prediction', 0):5d}"
              f"  {shown:>6s}  ≥ {target:.1%}: {verdict}")  # fmt: skip
        for miss in row["disagreements"][:8]:
            print(f"      {miss['model']}: predicted {miss['predicted']} "
                  f"({miss['cells']}); real: {miss['reality'][:90]}")  # fmt: skip
    return missed


def run_ci(json_path: Path | None, scratch: Path) -> int:
    """CI's gate: the held-out targets on one test per op type, only their cells probed (the
    tests from the artifacts' copy, else generated from the installed onnx)."""
    root = NODE_TESTS if NODE_TESTS.is_dir() else generated_node_tests(scratch / "node")
    print(f"backend node tests: {root}")
    sample = ci_sample(root)
    started = time.perf_counter()
    data = ci_probe(sample)
    probed = time.perf_counter() - started
    found = agreement(data, None, sample)
    print(f"measured support, CI sample: {len(sample)} backend tests (one per op type), "
          f"{len(data.trt.cells)} cells + {len(data.trt.variants)} variants probed in "
          f"{probed:.0f} s, judged in {found['seconds']:.0f} s")  # fmt: skip
    missed = judge(found, judged=True, sample=True)
    if json_path:
        from deploylens.core.files import write_json

        write_json(json_path, {"ci": True, "models": len(sample), "agreement": found,
                               "missed": missed})  # fmt: skip
    for miss in missed:
        print(f"bench/support_measured.py: held-out target missed: {miss}", file=sys.stderr)
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--ci", action="store_true", help="CI's gate (see the module's doc)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--limit", type=int)
    parser.add_argument(
        "--cache", type=Path, help="reuse the measurement cached in this folder (not timed)"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="deploylens-measured-bench-"))
    # an empty cache, so the probe is timed; --cache: a measurement made before, reused
    os.environ["DEPLOYLENS_CACHE_DIR"] = str(args.cache or scratch)
    missed: list[str] = []
    try:
        if args.ci:
            return run_ci(args.json, scratch)
        data, figures = probe(args.quick, reuse=args.cache is not None)
        result: dict[str, Any] = {"quick": args.quick, "probe": figures}
        print(f"measured matrix ({'quick sample' if args.quick else 'full'}, 2 cores)")
        print(f"  probes {figures['probes']} by domain {figures['by_domain']}; not probed "
              f"{figures['not_probed']}; variants {figures['attribute_variants']}")  # fmt: skip
        print(f"  probe time {figures['seconds']:.1f} s   cache {figures['cache_mb']:.2f} MB   "
              f"warm load {figures['warm_load_s']:.3f} s (target ≤ 0.3 s)")  # fmt: skip
        print(f"  TensorRT-RTX {figures['tensorrt_rtx']}")
        print(f"  ONNX Runtime CPU {figures['ort_cpu']}")
        if NODE_TESTS.is_dir():
            result["agreement"] = found = agreement(data, args.limit)
            print(f"\nprediction vs reality on {found['models']} ONNX backend node tests "
                  f"({found['seconds']:.0f} s)")  # fmt: skip
            missed = judge(found, judged=not (args.quick or args.limit))
            result["elsewhere"] = other = elsewhere(data)
            print(f"\nthe same on the {other['models']} other ONNX files of the artifacts "
                  "(no probe came from them)")  # fmt: skip
            for name in ("trt-parse", "trt-build"):
                row = other[name]
                rate = "—" if row["agreement"] is None else f"{row['agreement']:.1%}"
                shown = ("agree", "disagree", "agreement", "disagreements")
                rest = {k: v for k, v in row.items() if k not in shown}
                print(f"  {name:10s} agree {row.get('agree', 0):4d}  disagree "
                      f"{row.get('disagree', 0):3d}  {rate:>6s}  {rest}")  # fmt: skip
                for miss in row["disagreements"][:8]:
                    print(f"      {miss[:150]}")
        else:
            print(f"\n(no {NODE_TESTS}: prediction vs reality skipped)")
        result["documented"] = table = documented(data)
        print(f"\nonnx-tensorrt {table['table']} table vs the measured TensorRT-RTX cell: "
              f"{table['same']} of {table['compared']} cells agree")  # fmt: skip
        for label, count in table["classes"].items():
            print(f"  {count:5d}  {label}  (e.g. {table['examples'][label]})")
        if args.json:
            from deploylens.core.files import write_json

            write_json(args.json, result)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for miss in missed:
        print(f"bench/support_measured.py: held-out target missed: {miss}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
