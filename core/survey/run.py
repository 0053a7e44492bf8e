"""The survey's driver: each model through the single commands' own jobs — export (the other
exporter tried where the first fails), validate against PyTorch, TensorRT-RTX's live parse, an
ahead-of-time build per compute capability — each job in a worker process of its own, so a
model that crashes or exhausts memory is a row with the cause, never the end of the survey.
Every cell is its command's own verdict (the CLI and the panels say the same), with the CPU
seconds of the step's processes. Rows are cached by content (the spec, its files' bytes, the
library versions and the options): a killed survey resumes where it stopped, a re-run
recomputes only what changed."""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core import typed
from deploylens.core.errors import UserError
from deploylens.core.files import write_cache_file
from deploylens.core.results import EXIT_INCONCLUSIVE, Result
from deploylens.core.survey.rows import SKIPPED, StepCell, SurveyRow
from deploylens.core.survey.specs import slug
from deploylens.core.worker import protocol

ROW_SCHEMA = 2  # bump when a row's meaning changes (2: builds profiled from validated shapes)
LIBRARIES = ("deploylens", "torch", "torchvision", "timm", "transformers", "onnx", "onnxruntime",
             "onnxscript", "tensorrt-rtx-cu12")  # fmt: skip
ROW_LIMIT = 4 << 20
REFUSALS = (protocol.USER, protocol.MISSING_DEPENDENCY)  # a worker's sentence: no crash
Progress = Callable[[float, str], None]


@dataclass
class SurveyOptions:
    """What every model goes through (the single commands' flags)."""

    out: str  # where the exported models and plans go
    exporter: str = "dynamo"
    target_cc: list[str] = field(default_factory=lambda: ["sm89"])
    validate: bool = True
    support: bool = True
    build: bool = True
    trust: bool = False  # FILE.py:factory specs run with consent
    python: str | None = None
    cache: bool = True


def survey(
    specs: list[str], options: SurveyOptions, progress: Progress | None = None
) -> list[SurveyRow]:
    """A row per spec, in order; each from the cache where its key is there."""
    rows = []
    for index, spec in enumerate(specs):
        key = row_key(spec, options)
        cached = load_row(key) if options.cache else None
        if progress is not None:
            said = "cached" if cached is not None else "running"
            progress(index / max(len(specs), 1), f"{spec} ({index + 1} of {len(specs)}, {said})")
        row = cached or survey_one(spec, options, key, f"{index:04d}-{slug(spec)}")
        if cached is None and options.cache:
            save_row(row)
        rows.append(row)
    return rows


def survey_one(spec: str, options: SurveyOptions, key: str, name: str) -> SurveyRow:
    """One model's row: every step it can take, each in its own worker."""
    started = time.perf_counter()
    row = SurveyRow(spec, key)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    onnx_given = spec.lower().endswith(".onnx")
    if onnx_given:
        row.onnx = str(Path(spec).resolve())
    else:
        row.onnx = _export(row, spec, options, out / f"{name}.onnx")
    ready = bool(row.onnx) and Path(row.onnx).is_file()
    validated: dict[str, list[int]] = {}
    if options.validate:
        argv = [row.onnx] + ([] if onnx_given else ["--torch", spec])
        argv += ["--trust"] if options.trust and not onnx_given else []
        checked = _command_step(row, "validate", "validate", argv, options, ready)
        validated = dict(checked.inputs) if checked is not None else {}
    if options.support:
        row.cells.append(_support(row.onnx, options) if ready else _skipped("support trt-rtx"))
    if options.build:
        for cc in options.target_cc:
            plan = out / f"{name}.{cc}.plan"
            argv = [row.onnx, "--build", "--target-cc", cc, "--engine", str(plan)]
            argv += profile_args(row.onnx, validated) if ready else []
            _command_step(row, "build", f"build {cc}", argv, options, ready)
    row.seconds = time.perf_counter() - started
    return row


def _export(row: SurveyRow, spec: str, options: SurveyOptions, out: Path) -> str:
    """The export, with the other exporter tried where the first fails: the cell names which
    exporter worked and the other's cause."""
    first = options.exporter
    argv = [spec, "--exporter", first, "--out", str(out)] + (["--trust"] if options.trust else [])
    cell, result = _measured(
        "export", lambda: _request("export", argv, options).run(options.python)
    )
    if cell.severity == "fail" and result is not None and result.findings:
        other = "torchscript" if first == "dynamo" else "dynamo"
        if result.findings[0].other_exporter == "exports":
            argv = [spec, "--exporter", other, "--out", str(out)]
            argv += ["--trust"] if options.trust else []
            again, redo = _measured(
                "export", lambda: _request("export", argv, options).run(options.python)
            )
            again.cpu_s += cell.cpu_s
            again.wall_s += cell.wall_s
            again.detail = f"{other} (the {first} exporter: {cell.word})"
            row.cells.append(again)
            return redo.path if redo is not None and redo.ok else ""
    found = result.findings[0].message[:200] if result is not None and result.findings else ""
    cell.detail = first + (f": {found}" if found else "")
    row.cells.append(cell)
    return result.path if result is not None and result.ok else ""


def _support(onnx: str, options: SurveyOptions) -> StepCell:
    """TensorRT-RTX's own parser on the file (the live ``support --target trt-rtx``)."""
    import importlib.util

    from deploylens.core.support.request import TensorRTProbeRequest
    from deploylens.core.trt.tensorrt_adapter import RTX_MODULE

    step = "support trt-rtx"
    if importlib.util.find_spec(RTX_MODULE) is None:
        return StepCell(step, "INCONCLUSIVE: TensorRT-RTX is not installed (pip install "
                        "'deploylens[trt]')", "warn", EXIT_INCONCLUSIVE)  # fmt: skip
    request = TensorRTProbeRequest(str(Path(onnx).resolve()), RTX_MODULE)
    cell, result = _measured(step, lambda: request.run(options.python))
    if result is not None and result.unsupported_nodes:
        cell.detail = "blocked: " + ", ".join(result.unsupported_nodes[:5])
    elif result is not None and result.supported:
        cell.detail = f"parses all {result.nodes} nodes"
    return cell


def profile_args(onnx_path: str, validated: dict[str, list[int]]) -> list[str]:
    """``--profile`` for each input with a dynamic dimension, from the shapes the model was
    validated on: 1 … that shape … twice it in each dynamic dimension (a build for a one-token
    engine is what TensorRT makes without one). None where validation gave no shapes: the
    build then says what it needs."""
    import onnx

    model = onnx.load(onnx_path, load_external_data=False)
    found = []
    for given in model.graph.input:
        shape = validated.get(given.name)
        dims = given.type.tensor_type.shape.dim
        if shape is None or len(shape) != len(dims):
            continue
        dynamic = [not d.HasField("dim_value") or d.dim_value <= 0 for d in dims]
        if not any(dynamic):
            continue
        low = [1 if free else n for n, free in zip(shape, dynamic, strict=True)]
        high = [2 * n if free else n for n, free in zip(shape, dynamic, strict=True)]
        text = "/".join("x".join(str(n) for n in s) for s in (low, shape, high))
        found += ["--profile", f"{given.name}:{text}"]
    return found


def _command_step(
    row: SurveyRow, command: str, step: str, argv: list[str], options: SurveyOptions, ready: bool
) -> Any:
    """The command's step as a cell (its result returned for the steps after it)."""
    if not ready:
        row.cells.append(_skipped(step))
        return None
    cell, result = _measured(step, lambda: _request(command, argv, options).run(options.python))
    plan: int = result.engine_bytes if command == "build" and result is not None else 0
    if plan:
        cell.detail = f"plan {plan / 1e6:.2f} MB" + (" (profile from the validated shapes)"
                                                     if "--profile" in argv else "")  # fmt: skip
    row.cells.append(cell)
    return result


def _skipped(step: str) -> StepCell:
    return StepCell(step, "not run: no model from the export", SKIPPED, 0)


def _request(command: str, argv: list[str], options: SurveyOptions) -> Any:
    """The command's own request from the arguments a user would type: its defaults, its
    checks and its consent, as ``deploylens COMMAND`` makes them."""
    import importlib

    from deploylens.core.job_table import command_homes

    declared = importlib.import_module(command_homes()[command]).COMMANDS
    parser = argparse.ArgumentParser(prog=f"deploylens {command}", exit_on_error=False)
    next(c for c in declared if c.name == command).add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except argparse.ArgumentError as exc:
        raise UserError(f"deploylens {command}: {exc}") from None
    if command == "export":
        from deploylens.core.export.request import ExportRequest

        return ExportRequest.from_args(args).prepared(trust=options.trust)
    if command == "validate":
        from deploylens.core.validate.request import ValidateRequest

        return ValidateRequest.from_args(args).prepared(trust=options.trust)
    from deploylens.core.trt.request import BuildRequest

    return BuildRequest.from_args(args).prepared()


def _measured(step: str, run: Callable[[], Result]) -> tuple[StepCell, Any]:
    """The step's verdict as a cell, with the CPU seconds of its worker processes (each waited
    for, so counted among this process's children); a refusal or a crash is the cell's word."""
    from deploylens.core.worker.client import JobFailure

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result: Any = None
    try:
        result = run()
        verdict = result.verdict()
        evidence = verdict.evidence.count if verdict.evidence is not None else 0
        cell = StepCell(step, verdict.word, verdict.severity, verdict.exit_code, evidence)
    except JobFailure as failure:  # the worker refused, or crashed or ran out of memory
        said = "refused" if failure.kind in REFUSALS else "crashed"
        cell = StepCell(step, f"{said}: {failure.message}", "fail", 1)
    except (UserError, SystemExit) as exc:
        said = exc.message if isinstance(exc, UserError) else f"bad arguments ({exc.code})"
        cell = StepCell(step, f"refused: {said}", "fail", 1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cell.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cell.wall_s = time.perf_counter() - started
    return cell, result


# -- the result cache -------------------------------------------------------------------------
def row_key(spec: str, options: SurveyOptions) -> str:
    """The row's content address: the spec, the bytes of the files it names, the versions of
    every library a step runs, and the options that change a verdict."""
    digest = hashlib.sha256()
    versions = {name: _version(name) for name in LIBRARIES}
    chosen = {
        "exporter": options.exporter,
        "target_cc": options.target_cc,
        "validate": options.validate,
        "support": options.support,
        "build": options.build,
    }
    digest.update(json.dumps([ROW_SCHEMA, spec, versions, chosen], sort_keys=True).encode())
    for file in _files_of(spec):
        digest.update(file.name.encode())
        with file.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:32]


def _files_of(spec: str) -> list[Path]:
    """The files a spec's model comes from (none for a registry name)."""
    if spec.startswith("hf:"):
        text = spec[len("hf:") :]
    elif ".py:" in spec:
        text = spec.rpartition(".py:")[0] + ".py"
    else:
        text = spec
    path = Path(text)
    if path.is_dir():  # the folder's own regular files: a link may point outside it
        return sorted(p for p in path.iterdir() if p.is_file() and not p.is_symlink())
    return [path] if path.is_file() else []


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def cache_folder() -> Path:
    from deploylens.core.support.collect import cache_dir

    return cache_dir() / "survey"


def load_row(key: str) -> SurveyRow | None:
    """A row cached under ``key``; one that does not read back is computed again."""
    from deploylens.core.own_files import read_own_json

    path = cache_folder() / f"{key}.json"
    if not path.is_file():
        return None
    try:
        row = typed.from_dict(SurveyRow, read_own_json(path, "survey row", ROW_LIMIT), path.name)
    except UserError:
        return None
    return row if row.key == key else None


def save_row(row: SurveyRow) -> None:
    write_cache_file(cache_folder() / f"{row.key}.json", json.dumps(row.to_dict()))


def options_from(args: argparse.Namespace) -> SurveyOptions:
    targets = [t.strip() for t in (args.target_cc or "sm89").split(",") if t.strip()]
    return SurveyOptions(
        out=str(args.out), exporter=args.exporter, target_cc=targets,
        validate=not args.no_validate, support=not args.no_support, build=not args.no_build,
        trust=args.trust, python=args.python, cache=not args.no_cache,
    )  # fmt: skip
