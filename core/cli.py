"""``deploylens``: the GUI with no arguments (or a file), every job headless as a subcommand.

User errors print one sentence to stderr and exit 1; a traceback is only for real bugs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from deploylens.core import __version__
from deploylens.core.errors import UserError
from deploylens.core.worker.client import CRASHED, EXITED, START_FAILED, JobFailure

COMMANDS = (
    "inspect",
    "graph",
    "support",
    "export",
    "diagnose",
    "validate",
    "engine",
    "build",
    "calibrate",
    "trace",
    "profile",
    "demo",
    "env",
    "gui",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deploylens",
        description="DeployLens: PyTorch → ONNX → TensorRT workbench. "
        "With no command, opens the GUI (optionally on FILE).",
    )
    parser.add_argument("--version", action="version", version=f"deploylens {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    inspect = commands.add_parser("inspect", help="summarize an ONNX model (weights stay on disk)")
    inspect.add_argument("model", type=Path)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.add_argument("--no-check", action="store_true", help="skip the onnx checker")

    graph = commands.add_parser("graph", help="graph statistics, or render the graph to PNG")
    graph.add_argument("model", type=Path)
    graph.add_argument("--stats", action="store_true", help="nodes, groups, depth, layout time")
    graph.add_argument("--png", type=Path, help="render the graph view to this PNG (headless)")
    graph.add_argument(
        "--expand",
        type=int,
        default=0,
        metavar="DEPTH",
        help="expand module groups to this depth (0: top level only)",
    )
    graph.add_argument("--overlay", type=Path, help="JSON {node_name: value} to colour nodes by")
    graph.add_argument("--json", action="store_true", help="print statistics as JSON")

    support = commands.add_parser(
        "support", help="op support: which targets run the model, or one op / aten op everywhere"
    )
    support.add_argument("model", type=Path, nargs="?")
    support.add_argument(
        "--target",
        action="append",
        default=[],
        help="ort-cpu, ort-cuda, ort-<Provider>, trt-<version>, or trt-live (the installed "
        "TensorRT parser); repeatable",
    )
    support.add_argument("--op", help="an ONNX op: its opset history, ORT kernels, TensorRT rows")
    support.add_argument("--domain", default="", help="the --op's domain (default ai.onnx)")
    support.add_argument("--aten", help="a PyTorch op (aten::asinh): which exporter translates it")
    support.add_argument(
        "--sample",
        help="a bundled PyTorch sample: its aten ops, exporter by "
        "exporter (torch.export dry run in the worker)",
    )
    support.add_argument("--refresh", action="store_true", help="rebuild the cached registries")
    support.add_argument("--python", help="interpreter whose torch/onnxruntime to ask")
    support.add_argument("--json", action="store_true")

    from deploylens.core.export.cli_export import add_arguments

    add_arguments(commands.add_parser("export", help="export a PyTorch model to ONNX, checked"))
    add_arguments(
        commands.add_parser(
            "diagnose", help="try an export, explain a failure and list the fixes with code"
        )
    )

    validate = commands.add_parser(
        "validate",
        help="compare ONNX Runtime with PyTorch (or an unoptimized ORT) on the same "
        "inputs; exit 1 on mismatch",
    )
    validate.add_argument("model", type=Path, nargs="?")
    validate.add_argument(
        "--torch",
        help="the PyTorch source: sample:NAME, torchvision:NAME, "
        "FILE.py:factory, MODEL.pt, MODEL.pt2",
    )
    validate.add_argument(
        "--inputs",
        help=".npz of inputs by input name, or a folder of images/.npy/.npz "
        "(default: seeded random)",
    )
    validate.add_argument(
        "--preprocess",
        default="",
        help="for image folders: imagenet, or resize=256,crop=224,mean=a/b/c,std=a/b/c,"
        "scale=1/255,layout=NCHW,order=RGB",
    )
    validate.add_argument("--rtol", action="append", default=[], help="N or OUTPUT:N")
    validate.add_argument("--atol", action="append", default=[], help="N or OUTPUT:N")
    validate.add_argument(
        "--rel-l2",
        action="append",
        default=[],
        help="N or OUTPUT:N: an output's ‖got−want‖/‖want‖ limit (default max(0.01, rtol))",
    )
    validate.add_argument(
        "--statistic", default="elemwise", choices=("elemwise", "max", "mean", "median", "quantile")
    )
    validate.add_argument("--seed", type=int, default=0)
    validate.add_argument("--trust", action="store_true", help="consent to running FILE.py")
    validate.add_argument("--python", help="worker interpreter")
    validate.add_argument("--json", action="store_true")
    validate.add_argument(
        "--layerwise", action="store_true", help="compare every mapped intermediate tensor"
    )
    validate.add_argument(
        "--budget-mb",
        type=float,
        default=256.0,
        help="activations held at once in layer-wise mode (default 256)",
    )
    validate.add_argument(
        "--save", type=Path, help="write the result as JSON (re-open with --open)"
    )
    validate.add_argument("--csv", type=Path, help="write the per-node table (or outputs) as CSV")
    validate.add_argument("--open", type=Path, help="show a saved result instead of running")
    engine = commands.add_parser(
        "engine",
        help="a TensorRT engine's layers (trtexec --exportLayerInfo), profile, times and diff; "
        "no TensorRT needed",
    )
    engine.add_argument("layers", type=Path, help="trtexec --exportLayerInfo JSON")
    engine.add_argument("--profile", type=Path, help="trtexec --exportProfile JSON")
    engine.add_argument("--times", type=Path, help="trtexec --exportTimes JSON")
    engine.add_argument("--log", type=Path, help="trtexec log (or TREx *.profile.metadata.json)")
    engine.add_argument(
        "--warmup-ms",
        type=float,
        help="trtexec's --warmUp for --times records (default: from --log, else 200)",
    )
    engine.add_argument("--diff", type=Path, help="another engine's layer info to compare with")
    engine.add_argument("--diff-profile", type=Path, help="that engine's --exportProfile JSON")
    engine.add_argument("--json", action="store_true")
    build = commands.add_parser(
        "build", help="check TensorRT build settings for a version; print trtexec/Polygraphy lines"
    )
    build.add_argument("model", type=Path)
    build.add_argument("--settings", type=Path, help="TOML ([build] table or top level)")
    build.add_argument("--trt-version", default="10.16", help="8.6, 10.x or 11.x (default 10.16)")
    build.add_argument("--engine", default="", help="--saveEngine path for the command")
    build.add_argument("--print-trtexec", action="store_true")
    build.add_argument("--polygraphy", action="store_true", help="print the Polygraphy line")
    build.add_argument("--migrate", action="store_true", help="show the TensorRT 11 recipe")
    build.add_argument("--script", type=Path, help="write a standalone Python build script")
    build.add_argument(
        "--build", action="store_true", help="build for real with the installed TensorRT (GPU)"
    )
    build.add_argument("--python", help="worker interpreter for --build")
    build.add_argument("--json", action="store_true")
    calibrate = commands.add_parser(
        "calibrate",
        help="INT8 calibration on the CPU (ONNX Runtime, QDQ); accuracy vs fp32; TensorRT cache",
    )
    calibrate.add_argument("model", type=Path)
    calibrate.add_argument("--data", type=Path, required=True, help="images or .npy/.npz files")
    calibrate.add_argument(
        "--method", default="entropy", choices=("minmax", "entropy", "percentile")
    )
    calibrate.add_argument("--percentile", type=float, default=99.99)
    calibrate.add_argument("--preprocess", default="", help="as for validate (e.g. imagenet)")
    calibrate.add_argument("--batch-size", type=int)
    calibrate.add_argument("--batches", type=int, help="at most this many batches")
    calibrate.add_argument(
        "--out", type=Path, help="the Q/DQ model (default MODEL.METHOD.qdq.onnx)"
    )
    calibrate.add_argument(
        "--trt-cache", type=Path, help="also write a TensorRT ≤10 calibration cache"
    )
    calibrate.add_argument("--trt-version", default="10.16", help="the cache header's TensorRT")
    calibrate.add_argument(
        "--evaluate",
        type=int,
        default=20,
        help="samples for the accuracy check (from --eval-data, else the calibration data)",
    )
    calibrate.add_argument(
        "--eval-data", type=Path, help="held-out images/arrays for the accuracy check"
    )
    calibrate.add_argument("--python", help="worker interpreter")
    calibrate.add_argument("--json", action="store_true")

    trace = commands.add_parser(
        "trace", help="a profiler trace's statistics (Kineto/Chrome, ONNX Runtime, nsys SQLite)"
    )
    trace.add_argument("file", type=Path)
    trace.add_argument("--stats", action="store_true", help="print statistics (the default)")
    trace.add_argument("--top", type=int, default=15, help="kernels in the table")
    trace.add_argument("--json", action="store_true")
    trace.add_argument("--chrome", type=Path, help="also write it as Chrome trace JSON (Perfetto)")
    trace.add_argument("--csv", type=Path, help="write the tables as CSV files into this folder")

    profile = commands.add_parser(
        "profile", help="run a model repeatedly under a profiler and write a trace (worker)"
    )
    profile.add_argument(
        "model",
        help="ort: FILE.onnx; torch: an export spec (torchvision:NAME, FILE.py:f, …); "
        "trt: FILE.engine",
    )
    profile.add_argument("--backend", choices=("ort", "torch", "trt"), default="ort")
    profile.add_argument("--streams", type=int, default=2, help="CUDA streams (torch on a GPU)")
    profile.add_argument("--iterations", type=int, default=20)
    profile.add_argument("--device", help="torch device (default: cuda when available)")
    profile.add_argument("--out", type=Path, required=True, help="trace file to write (.json)")
    profile.add_argument("--python", help="worker interpreter")
    profile.add_argument("--json", action="store_true")

    demo = commands.add_parser("demo", help="run everything on the bundled samples")
    demo.add_argument("--out", type=Path, default=Path("deploylens-demo"))
    demo.add_argument("--python", help="worker interpreter (default: this one)")
    demo.add_argument("--no-screenshot", action="store_true")

    env = commands.add_parser("env", help="what the worker interpreter has")
    env.add_argument("--python", help="worker interpreter (default: the one in Preferences)")
    env.add_argument("--json", action="store_true")

    gui = commands.add_parser("gui", help="open the GUI")
    gui.add_argument("file", nargs="?", type=Path)
    return parser


def cmd_inspect(args: argparse.Namespace) -> int:
    from deploylens.core.model.summary import inspect_model
    from deploylens.core.model.summary_text import summary_text

    summary = inspect_model(args.model, check=not args.no_check)
    print(json.dumps(summary.to_dict(), indent=2) if args.json else summary_text(summary))
    for problem in summary.problems:
        print(f"deploylens: error: {args.model.name}: {problem}", file=sys.stderr)
    return 1 if summary.problems else 0


def cmd_graph(args: argparse.Namespace) -> int:
    from deploylens.core.graph.stats import graph_stats, stats_text

    if not (args.stats or args.png or args.json):
        args.stats = True
    if args.stats or args.json:
        stats = graph_stats(args.model, args.expand)
        print(json.dumps(stats, indent=2) if args.json else stats_text(stats))
    if args.png:
        from deploylens.core.frontends import load_frontend

        rendered = load_frontend("graph_png")(
            args.model, args.png, args.expand, str(args.overlay) if args.overlay else None
        )
        print(f"Graph: {rendered['png']} ({rendered['boxes']:,} boxes)")
        if rendered["unmatched"]:
            print(f"  {len(rendered['unmatched'])} overlay names match no node", file=sys.stderr)
    return 0


def cmd_support(args: argparse.Namespace) -> int:
    from deploylens.core.support import queries
    from deploylens.core.support.loader import load_matrix

    if not (args.model or args.op or args.aten or args.sample):
        raise UserError("Give a MODEL, --op NAME, --aten aten::name or --sample NAME.")
    model = None
    if args.model:
        from deploylens.core.model.loading import read_model

        model = read_model(args.model)  # a bad file is said before the registries load
    matrix = load_matrix(python=args.python, refresh=args.refresh)
    output: dict[str, Any] = {}
    texts: list[str] = []
    status = 0
    if args.op:
        output["op"] = report = queries.op_report(matrix, args.op, args.domain)
        texts.append(queries.op_text(report))
    if args.aten:
        output["aten"] = report = queries.aten_report(matrix, args.aten)
        texts.append(queries.aten_text(report))
    if args.sample:
        from deploylens.core.jobs import run_job

        ops = run_job("support.sample_aten", {"sample": args.sample}, python=args.python)["ops"]
        rows = {op: {"calls": n, **queries.aten_report(matrix, op)} for op, n in ops.items()}
        output["sample"] = {"name": args.sample, "ops": rows}
        texts.append(f"{args.sample}: torch.export dry run")
        texts.extend(
            f"  ×{row['calls']} " + queries.aten_text(row).replace("\n", "\n    ")
            for row in rows.values()
        )
    if model is not None:
        from deploylens.core.support.analysis import analyze, parse_target, report_dict

        wanted = args.target or ["ort-cpu", "trt-10.1"]
        if "trt-live" in wanted:
            from deploylens.core.jobs import run_job

            wanted = [t for t in wanted if t != "trt-live"]
            live = run_job("support.tensorrt_probe", {"path": str(args.model)}, python=args.python)
            output["tensorrt_live"] = live
            texts.append(
                f"trt-live (TensorRT {live['version']}, {live['api']}): "
                f"{'OK' if live['supported'] else 'BLOCKED'}"
                + "".join(f"\n  ✗ {name}" for name in live["unsupported_nodes"])
            )
            status = 0 if live["supported"] else 1
        targets = [parse_target(t) for t in wanted]
        reports = analyze(model, matrix, targets)
        output["targets"] = report_dict(reports)
        texts.append(queries.reports_text(reports))
        status = max(status, 0 if all(r.ok for r in reports) else 1)
    print(json.dumps(output, indent=2) if args.json else "\n\n".join(texts))
    return status


def cmd_demo(args: argparse.Namespace) -> int:
    from deploylens.core.demo import run_demo

    report = run_demo(args.out, python=args.python, screenshot=not args.no_screenshot)
    opened = sum(1 for m in report["models"] if "summary" in m)
    print(f"Inspected {opened}/{len(report['models'])} bundled models in {report['seconds']} s.")
    print(f"Report: {args.out / 'report.md'}")
    if report.get("screenshot"):
        print(f"Main window: {report['screenshot']}")
    elif report.get("screenshot_error"):
        print(f"Screenshot skipped: {report['screenshot_error']}", file=sys.stderr)
    return 0 if opened == len(report["models"]) else 1


def cmd_env(args: argparse.Namespace) -> int:
    from deploylens.core.demo import _environment_lines
    from deploylens.core.jobs import Worker
    from deploylens.core.settings import AppSettings

    python = args.python or AppSettings.load().worker_python or None
    worker = Worker(python)
    try:
        hello = worker.start()
    finally:
        worker.close()
    print(json.dumps(hello, indent=2) if args.json else "\n".join(_environment_lines(hello)))
    if not args.json:
        from deploylens.core.worker.probe import pip_install_line

        for name, info in hello["packages"].items():
            if name != "cuda_driver" and not info.get("version"):
                print(
                    f"  missing {name} ({info['purpose']}): "
                    f"{pip_install_line(name, hello['python']['executable'])}"
                )
    return 0


def _export_command(name: str, args: argparse.Namespace) -> int:
    from deploylens.core.export import cli_export

    return int(getattr(cli_export, name)(args))


def _build_command(name: str, args: argparse.Namespace) -> int:
    from deploylens.core.trt import cli_build

    return int(getattr(cli_build, name)(args))


def _trace_command(args: argparse.Namespace, name: str = "cmd_trace") -> int:
    from deploylens.core.trace import cli_trace

    return int(getattr(cli_trace, name)(args))


def cmd_validate(args: argparse.Namespace) -> int:
    from deploylens.core.validate.report import validation_text
    from deploylens.core.validate.results import load_result, save_csv, save_result

    if args.open:
        result = load_result(args.open)
    elif args.model is None:
        raise UserError("Give a model to validate, or --open a saved result.")
    else:
        result = _run_validation(args)
    if args.save:
        save_result(result, args.save)
    if args.csv:
        save_csv(result, args.csv)
    print(json.dumps(result, indent=2) if args.json else validation_text(result))
    return 0 if result["passed"] else 1


def _run_validation(args: argparse.Namespace) -> dict[str, Any]:
    from deploylens.core.jobs import run_job
    from deploylens.core.validate.tolerances import Tolerances, parse_tolerance

    tolerances = Tolerances(
        rtol=parse_tolerance(args.rtol, 1e-5),
        atol=parse_tolerance(args.atol, 1e-5),
        statistic=args.statistic,
        rel_l2=parse_tolerance(args.rel_l2, None),
    )
    from deploylens.core.files import input_file, input_folder

    input_file(args.model, "ONNX model")
    params: dict[str, Any] = {
        "path": str(args.model.resolve()),
        "seed": args.seed,
        "layerwise": args.layerwise,
        "budget_mb": args.budget_mb,
        "tolerances": tolerances.to_dict(),
    }
    if args.inputs:
        input_folder(args.inputs, "inputs .npz")
        params["inputs"] = str(Path(args.inputs).resolve())
        params["preprocess"] = args.preprocess
    if args.torch:
        from deploylens.core.export.sources import grant_consent, parse_spec

        source = parse_spec(args.torch)
        if source.kind == "python" and args.trust:
            grant_consent(source.target)
        params["torch"] = source.to_dict()
    from deploylens.core.export.plugin_api import plugin_entries

    params["plugin_entries"] = plugin_entries()
    return run_job("validate.outputs", params, python=args.python)


def cmd_engine(args: argparse.Namespace) -> int:
    from deploylens.core.engine.layers import load_layer_info
    from deploylens.core.engine.timings import (
        layer_time_dicts,
        load_profile,
        load_summary,
        load_times,
    )
    from deploylens.core.engine.view import (
        diff_engines,
        diff_text,
        engine_text,
        layer_table,
        unmatched_times,
    )

    info = load_layer_info(args.layers)
    times = load_profile(args.profile)[1] if args.profile else None
    rows = layer_table(info, times)
    report: dict[str, Any] = {"layers": rows, "bindings": info.bindings, "detailed": info.detailed}
    text = [engine_text(info, rows)]
    if times is not None:
        report["profile"] = layer_time_dicts(times)
        stray = unmatched_times(info, times)
        report["profile_unmatched"] = stray
        if stray:
            text.append(f"  {len(stray)} profile entries match no layer (another engine?)")
    problems: list[str] = []
    summary = None
    if args.log:
        try:
            summary = report["summary"] = load_summary(args.log)
        except UserError as exc:  # the layers and profile still stand on their own
            problems.append(exc.message)
    if args.times:
        warmup = summary.get("warmup_ms") if summary else None
        source = f"the warm-up named in {args.log.name}" if warmup is not None else ""
        if args.warmup_ms is not None:
            warmup, source = args.warmup_ms, "--warmup-ms"
        report["times"] = t = load_times(args.times, warmup, source)
        text.append(
            f"  --exportTimes: {t['inferences']} inferences, latency median "
            f"{t['latency']['median']:.6g} ms (mean {t['latency']['mean']:.6g}, "
            f"p99 {t['latency']['p99']:.6g}), GPU compute median "
            f"{t['compute']['median']:.6g} ms"
            + (f", throughput {t['throughput_qps']:.6g} qps" if "throughput_qps" in t else "")
        )
        text.append(f"    used {t['used']}")
    if summary:
        s = summary["summary"]
        text.append(
            f"  trtexec summary ({args.log.name}): throughput {s.get('throughput_qps', 0):.6g} qps"
            + (
                f", latency median {s['Latency']['median']:.6g} ms"
                if "median" in s.get("Latency", {})
                else ""
            )
        )
    if args.diff:
        other = load_layer_info(args.diff)
        other_times = load_profile(args.diff_profile)[1] if args.diff_profile else None
        report["diff"] = diff_engines(info, other, times, other_times)
        text.append(diff_text(report["diff"]))
    report["problems"] = problems
    print(json.dumps(report, indent=2) if args.json else "\n".join(text))
    for problem in problems:
        print(f"deploylens: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_gui(file: Path | None) -> int:
    from deploylens.core.frontends import load_frontend

    return int(load_frontend("gui")([str(file)] if file else []) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        argv = ["gui", *argv]  # `deploylens model.onnx` opens it in the GUI
    args = _parser().parse_args(argv)
    handlers: dict[str, Any] = {
        "inspect": cmd_inspect,
        "graph": cmd_graph,
        "support": cmd_support,
        "validate": cmd_validate,
        "engine": cmd_engine,
        "build": lambda a: _build_command("cmd_build", a),
        "calibrate": lambda a: _build_command("cmd_calibrate", a),
        "trace": _trace_command,
        "profile": lambda a: _trace_command(a, "cmd_profile"),
        "export": lambda a: _export_command("cmd_export", a),
        "diagnose": lambda a: _export_command("cmd_diagnose", a),
        "demo": cmd_demo,
        "env": cmd_env,
    }
    try:
        if args.command in handlers:
            return handlers[args.command](args)
        return cmd_gui(getattr(args, "file", None))
    except (UserError, JobFailure) as exc:
        print(f"deploylens: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  {exc.hint}", file=sys.stderr)
        tail = getattr(exc, "stderr_tail", "")
        if tail and getattr(exc, "kind", "") in (CRASHED, EXITED, START_FAILED):
            print("  The worker's last lines:", file=sys.stderr)
            print("\n".join(f"  | {line}" for line in tail.splitlines()), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`deploylens … | head`): nothing more to say, and nowhere to say
        # it. Point stdout at /dev/null so the interpreter's final flush does not fail again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 1


if __name__ == "__main__":
    sys.exit(main())
