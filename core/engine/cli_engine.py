"""``deploylens engine``: a TensorRT engine's layers, profile, times and diff from trtexec's
exports and logs — no TensorRT needed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from deploylens.core.command import Command, add_json
from deploylens.core.errors import UserError


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("layers", type=Path, help="trtexec --exportLayerInfo JSON")
    parser.add_argument("--profile", type=Path, help="trtexec --exportProfile JSON")
    parser.add_argument("--times", type=Path, help="trtexec --exportTimes JSON")
    parser.add_argument("--log", type=Path, help="trtexec log (or TREx *.profile.metadata.json)")
    parser.add_argument(
        "--warmup-ms",
        type=float,
        help="trtexec's --warmUp for --times records (default: from --log, else 200)",
    )
    parser.add_argument("--diff", type=Path, help="another engine's layer info to compare with")
    parser.add_argument("--diff-profile", type=Path, help="that engine's --exportProfile JSON")
    add_json(parser)


def cmd_engine(args: argparse.Namespace) -> int:
    from deploylens.core.engine.layers import load_layer_info
    from deploylens.core.engine.timings import (
        LayerTime,
        layer_time_dicts,
        load_profile,
        load_summary,
        load_times,
    )
    from deploylens.core.engine.view import (
        diff_engines,
        engine_text,
        layer_table,
        unmatched_times,
    )

    info = load_layer_info(args.layers)
    times = load_profile(args.profile)[1] if args.profile else None
    problems: list[str] = []
    summary = None
    if args.log:
        try:
            summary = load_summary(args.log)
        except UserError as exc:  # the layers and profile still stand on their own
            problems.append(exc.message)
    logged = (summary or {}).get("profile")
    if times is None and logged:  # the log's --dumpProfile table, where no export was given
        times = [LayerTime(**row) for row in logged["layers"]]
    rows = layer_table(info, times)
    report: dict[str, Any] = {
        "layers": [row.to_dict() for row in rows],
        "bindings": info.bindings,
        "detailed": info.detailed,
    }
    text = [engine_text(info, rows)]
    if times is not None:
        report["profile"] = layer_time_dicts(times)
        stray = unmatched_times(info, times)
        report["profile_unmatched"] = stray
        if stray:
            text.append(f"  {len(stray)} profile entries match no layer (another engine?)")
    if summary is not None:
        report["summary"] = summary
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
    if logged:
        text.append(
            f"  trtexec log ({args.log.name}): its profile table, {len(logged['layers'])} layers "
            f"over {logged['iterations']} iterations"
            + ("" if args.profile else " (the per-layer times above)")
        )
    if summary and summary["summary"]:
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
        diff = diff_engines(info, other, times, other_times)
        report["diff"] = diff.to_dict()
        text.append(diff.text())
    report["problems"] = problems
    print(json.dumps(report, indent=2) if args.json else "\n".join(text))
    for problem in problems:
        print(f"deploylens: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


COMMANDS = (
    Command(
        "engine",
        "a TensorRT engine's layers (trtexec --exportLayerInfo), profile, times and diff; no "
        "TensorRT needed",
        _arguments,
        cmd_engine,
    ),
)
