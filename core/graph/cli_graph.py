"""``deploylens graph``: graph statistics, or the graph view rendered to PNG, headless."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deploylens.core.command import Command, add_json


def _graph_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path)
    parser.add_argument("--stats", action="store_true", help="nodes, groups, depth, layout time")
    parser.add_argument("--png", type=Path, help="render the graph view to this PNG (headless)")
    parser.add_argument(
        "--expand",
        type=int,
        default=0,
        metavar="DEPTH",
        help="expand module groups to this depth (0: top level only)",
    )
    parser.add_argument("--overlay", type=Path, help="JSON {node_name: value} to colour nodes by")
    add_json(parser)


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


COMMANDS = (
    Command("graph", "graph statistics, or render the graph to PNG", _graph_arguments, cmd_graph),
)
