"""``deploylens trace FILE --stats``: the timeline's numbers, headless."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from deploylens.core.command import Command, add_json, add_python
from deploylens.core.trace.export import write_chrome, write_csv
from deploylens.core.trace.load import load_trace
from deploylens.core.trace.request import LabRequest, ProfileRequest, SweepRequest
from deploylens.core.trace.result import LabResult, ProfileResult, SweepResult
from deploylens.core.trace.stats import trace_stats
from deploylens.core.wording import counted


def _trace_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)
    parser.add_argument("--stats", action="store_true", help="print statistics (the default)")
    parser.add_argument("--top", type=int, default=15, help="kernels in the table")
    add_json(parser)
    parser.add_argument("--chrome", type=Path, help="also write it as Chrome trace JSON (Perfetto)")
    parser.add_argument("--csv", type=Path, help="write the tables as CSV files into this folder")


def _profile_arguments(parser: argparse.ArgumentParser) -> None:
    ProfileRequest.add_arguments(parser)
    add_python(parser)
    add_json(parser)


def _sweep_arguments(parser: argparse.ArgumentParser) -> None:
    SweepRequest.add_arguments(parser)
    add_python(parser)
    add_json(parser)


def _lab_arguments(parser: argparse.ArgumentParser) -> None:
    LabRequest.add_arguments(parser)
    add_python(parser)
    add_json(parser)


def cmd_trace(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    trace = load_trace(args.file)
    stats = trace_stats(trace)
    stats.import_s = time.perf_counter() - started
    if args.chrome:
        write_chrome(trace, args.chrome)
    if args.csv:
        for name, rows in stats.tables().items():
            write_csv(rows, args.csv / f"{name}.csv")
    empty = str(trace.meta.get("nothing_measured") or "")
    verdict = stats.verdict(empty)
    if args.json:  # the reason for the exit status travels with the figures
        data = {**stats.to_dict(), "verdict": verdict.to_json_dict()}
        print(json.dumps(data, indent=2, default=float))
        if empty:
            print(f"deploylens: nothing measured in {args.file.name}: {empty}.", file=sys.stderr)
        return verdict.exit_code
    print(
        f"{args.file}: {' '.join(filter(None, (stats.format, stats.version)))} — "
        f"{counted(stats.events, 'event')}, {counted(stats.lanes, 'lane')}, "
        f"{stats.span_us / 1e3:.3f} ms "
        f"({stats.import_s:.2f} s to import)"
    )
    print("  " + ", ".join(f"{k} {v:,}" for k, v in stats.kinds.items()))
    if stats.kernels:
        label, share = {
            "kernel": ("kernel", "GPU %"),
            "ort_node": ("ONNX Runtime node", "time %"),
            "cpu_op": ("CPU op (inclusive of the ops it calls)", "time %"),
        }[stats.table]
        print(
            f"  {label:<48}{'count':>7}{'total µs':>12}{'mean':>10}{'p90':>10}{'p99':>10}{share:>7}"
        )
        for row in stats.kernels[: args.top]:
            print(
                f"  {row.name[:47]:<48}{row.count:>7}{row.total_us:>12.1f}{row.mean_us:>10.2f}"
                f"{row.p90_us:>10.2f}{row.p99_us:>10.2f}{row.gpu_percent:>7.1f}"
            )
    for stream in stats.streams:
        print(f"  {stream.lane}: busy {stream.busy_percent:.1f}% ({stream.events:,} events)")
    if empty:  # nothing a kernel table or a diagnosis could stand on: a failure, said
        print(f"deploylens: nothing measured in {args.file.name}: {empty}.", file=sys.stderr)
        return 1
    ovl = stats.overlap
    if ovl.copy_ns and ovl.hidden_percent is not None:
        print(
            f"  copies {ovl.copy_ns / 1e3:.1f} µs, {ovl.hidden_percent:.1f}% hidden behind kernels"
        )
    if ovl.concurrency_ns:  # the Timeline's table: shares of the GPU span, idle included
        shares = ovl.busy_shares()
        print("  streams busy at once: " + ", ".join(f"{k}: {v:.1f}%" for k, v in shares))
    for copy in stats.copies:
        rate = f"{copy.median_gbps:.1f} GB/s" if copy.median_gbps else "?"
        print(
            f"  {copy.kind} {copy.memory}: {copy.count} copies, "
            f"{copy.bytes / 1e6:.1f} MB, median {rate}"
        )
    for hint in stats.hints:
        print(f"  hint: {hint}")
    for finding in stats.diagnosis.findings:
        print(f"  diagnosis: {finding.text()}".rstrip())
    if stats.diagnosis.skipped:
        print(f"  no diagnosis: {stats.diagnosis.skipped}")
    unknown = stats.unknown_categories
    if unknown:
        print(
            f"  {sum(unknown.values()):,} events in categories this version does not know, "
            "counted as 'other' (not kernels): "
            + ", ".join(f"{name} ×{count:,}" for name, count in unknown.items())
        )
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    """The capture runs in the worker (it runs the model); the trace's statistics follow."""
    result: ProfileResult = ProfileRequest.from_args(args).prepared().run(args.python)
    print(result.to_json() if args.json else result.summary())
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    result: SweepResult = SweepRequest.from_args(args).prepared().run(args.python)
    verdict = result.verdict()  # a lost point fails; a sweep that measured nothing: exit 3
    print(result.to_json() if args.json else result.summary())
    if verdict.exit_code and not args.json:
        print(f"deploylens: {verdict.word}", file=sys.stderr)
    return verdict.exit_code


def cmd_lab(args: argparse.Namespace) -> int:
    result: LabResult = LabRequest.from_args(args).prepared().run(args.python)
    print(result.to_json() if args.json else result.summary())
    return 0


COMMANDS = (
    Command(
        "trace",
        "a profiler trace's statistics (Kineto/Chrome, ONNX Runtime, nsys SQLite, trtexec)",
        _trace_arguments,
        cmd_trace,
    ),
    Command(
        "profile",
        "run a model repeatedly under a profiler and write a trace (worker)",
        _profile_arguments,
        cmd_profile,
    ),
    Command(
        "sweep",
        "profile every batch × streams × mode point: table, throughput-vs-latency plot, traces",
        _sweep_arguments,
        cmd_sweep,
    ),
    Command(
        "lab",
        "a lab scenario (h2d-bound, d2h-bound, compute-bound, launch-bound) and its diagnosis",
        _lab_arguments,
        cmd_lab,
    ),
)
