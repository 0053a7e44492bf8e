"""The timeline's summary and details panes as HTML: the capture's stats (latency, concurrency,
streams, copies, idle gaps) and one event with the graph nodes it belongs to (split from
``panel.py``, which wires the panes)."""

from __future__ import annotations

import html

from deploylens.core.trace.index import EventDetails
from deploylens.core.trace.stats_types import TraceStats
from deploylens.gui.timeline.canvas import format_ns


def _table(title: str, headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td align=right>{c}</td>" if i else f"<td>{html.escape(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<p><b>{title}</b></p><table cellspacing=4><tr>{head}</tr>{body}</table>"


def summary_html(stats: TraceStats, top: int = 0) -> str:
    """The diagnosis and hints first (the answers), then overlap, concurrency, streams, copies,
    gaps, kernels."""
    diagnosis, ovl = stats.diagnosis, stats.overlap
    parts = [
        f"<p><b>{html.escape(f.pattern)}</b> — {html.escape(f.claim)} "
        f"<i>{html.escape(f.advice)}</i></p>"
        for f in diagnosis.findings
    ]
    if diagnosis.skipped:
        parts.append(f"<p><i>No diagnosis: {html.escape(diagnosis.skipped)}.</i></p>")
    parts += [f"<p style='color:#b35900'>⚑ {html.escape(h)}</p>" for h in stats.hints]
    if ovl.copy_ns and ovl.hidden_percent is not None:
        parts.append(
            f"<p>Copies {ovl.copy_ns / 1e3:,.1f} µs, <b>{ovl.hidden_percent:.1f}%</b> hidden "
            "behind kernels on other streams.</p>"
        )
    if ovl.concurrency_ns:
        rows = [[label, f"{share:.1f}%"] for label, share in ovl.busy_shares()]
        parts.append(_table("Concurrency (streams busy at once)", ["", "time"], rows))
    if stats.streams:
        rows = [[r.lane, f"{r.busy_percent:.1f}%", f"{r.events:,}"] for r in stats.streams]
        parts.append(_table("Streams", ["lane", "busy", "events"], rows))
    if stats.copies:
        rows = [
            [
                f"{r.kind} {r.memory}",
                f"{r.count:,}",
                f"{r.bytes / 1e6:,.2f} MB",
                f"{(r.median_gbps or 0):.2f} GB/s",
            ]
            for r in stats.copies
        ]
        parts.append(_table("Copies", ["kind / memory", "count", "bytes", "median"], rows))
    gaps = [[f"GPU {g.device}", f"{g.gap_us:,.1f} µs"] for g in ovl.gaps[:5]]
    if gaps:
        parts.append(_table("Largest idle gaps", ["device", "gap"], gaps))
    if top and stats.kernels:
        rows = [
            [r.name[:70], f"{r.count:,}", f"{r.total_us:,.1f}", f"{r.gpu_percent:.1f}%"]
            for r in stats.kernels[:top]
        ]
        parts.append(_table("Top kernels", ["name", "count", "µs", "%"], rows))
    if stats.kinds:
        parts.append("<p>" + ", ".join(f"{k}: {v:,}" for k, v in stats.kinds.items()) + "</p>")
    return "".join(parts) or "<i>No GPU streams in this trace.</i>"


def details_html(info: EventDetails, nodes: list[str]) -> str:
    esc = html.escape
    event = info.event
    rows = [
        ("Name", esc(event.name)),
        ("Kind", event.kind),
        ("Lane", esc(event.lane)),
        ("Start", f"{info.relative_start_us:,.3f} µs"),
        ("Duration", format_ns(event.dur_ns)),
    ]
    if event.detail:
        rows.append(("Detail", esc(event.detail)))
    if event.bytes:
        rows.append(("Bytes", f"{event.bytes:,}"))
    if info.bandwidth_gbps is not None:
        rows.append(("Bandwidth", f"{info.bandwidth_gbps:.2f} GB/s"))
    if event.correlation >= 0:
        rows.append(("Correlation", str(event.correlation)))
    partner = info.correlated
    if partner is not None:
        rows.append(
            (
                "Correlated",
                f"<a href='event:{info.correlated_index}'>{esc(partner.name)}</a> "
                f"({partner.kind}, {format_ns(partner.dur_ns)}, {esc(partner.lane)})",
            )
        )
    if info.parents:
        rows.append(("NVTX / ranges", " › ".join(map(esc, info.parents))))
    if nodes:
        rows.append(("ONNX nodes", esc(", ".join(nodes[:8]))))
    return (
        "<table>"
        + "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
    )
