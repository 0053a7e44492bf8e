"""The engine view's data: a layer table joined with per-layer times, overlays for the ONNX graph,
and the diff of two engines (or two profiles of one)."""

from __future__ import annotations

from collections.abc import Callable

from deploylens.core.engine.layers import EngineInfo, myelin_region_count
from deploylens.core.engine.report import (
    EngineDiff,
    EngineSummary,
    FusionChange,
    LayerRow,
    PrecisionChange,
    Share,
    TimeDelta,
    TimeDeltas,
)
from deploylens.core.engine.timings import LayerTime


def layer_table(info: EngineInfo, times: list[LayerTime] | None = None) -> list[LayerRow]:
    """One row per layer: name, type, precisions and formats, tactic, ONNX nodes, time, share."""
    by_name = {t.name: t for t in times or []}
    total = sum(t.average_ms for t in times or []) or 0.0
    rows = []
    for index, layer in enumerate(info.layers):
        timing = by_name.get(layer.name)
        rows.append(
            LayerRow(
                index=index + 1,  # engine order: the order TensorRT runs them
                name=layer.name,
                type=layer.type,
                kind=layer.kind,
                in_precision="/".join(
                    dict.fromkeys(t.precision for t in layer.inputs if t.precision)
                ),
                out_precision=layer.precision,
                in_formats=[t.format for t in layer.inputs],
                out_formats=[t.format for t in layer.outputs],
                tactic=layer.tactic_name or layer.tactic,
                onnx_nodes=list(layer.onnx_nodes),
                region=layer.region,
                reformat=layer.is_reformat,
                time_ms=timing.average_ms if timing else None,
                percent=100.0 * timing.average_ms / total if timing and total else None,
            )
        )
    return rows


def engine_summary(
    info: EngineInfo, rows: list[LayerRow], top: int = 5, types: int = 6
) -> EngineSummary:
    """What TREx's summary page answers first: how long, where the time goes by layer type and
    by precision, what the reformat layers cost, and the slowest layers. Every breakdown covers
    every layer (the types past the first ``types`` fold into one "other" row) and the reformat
    count is the type table's "Reformat" row — the page contradicted itself ("0 reformat
    layers" beside "Reformat 3"; types covering 60 of 86 layers)."""
    timed = [r for r in rows if r.time_ms is not None]
    total = sum(r.time_ms or 0.0 for r in timed)

    def breakdown(key: Callable[[LayerRow], str]) -> list[Share]:
        table: dict[str, Share] = {}
        for row in rows:
            entry = table.setdefault(key(row), Share(key(row)))
            entry.layers += 1
            entry.ms += row.time_ms or 0.0
        for entry in table.values():
            entry.percent = 100.0 * entry.ms / total if total else None
        return sorted(table.values(), key=lambda e: (-e.ms, -e.layers, e.name))

    reformats = [r for r in rows if r.reformat]
    return EngineSummary(
        path=info.path,
        layers=len(rows),
        detailed=info.detailed,
        timed=bool(timed),
        total_ms=total if timed else None,
        by_type=fold(breakdown(lambda r: r.kind), types, total),
        # A reformat layer has an output precision like any other (it is counted in the header,
        # not invented as a precision); a names-only engine records none.
        by_precision=breakdown(lambda r: r.out_precision or "not recorded"),
        reformat_layers=len(reformats),
        reformat_ms=sum(r.time_ms or 0.0 for r in reformats) if timed else None,
        regions=myelin_region_count(info.layers),
        slowest=sorted(timed, key=lambda r: -(r.time_ms or 0.0))[:top],
    )


def fold(entries: list[Share], keep: int, total: float) -> list[Share]:
    """The first ``keep`` entries and one "other (N types)" row for the rest, so the rows still
    add up to every layer and all the time."""
    if len(entries) <= keep:
        return entries
    rest = entries[keep - 1 :]
    ms = sum(e.ms for e in rest)
    other = Share(
        f"other ({len(rest)} types)",
        sum(e.layers for e in rest),
        ms,
        100.0 * ms / total if total else None,
    )
    return [*entries[: keep - 1], other]


def unmatched_times(info: EngineInfo, times: list[LayerTime]) -> list[str]:
    """Profile entries with no layer of that name (a profile of another engine?)."""
    names = {layer.name for layer in info.layers}
    return [t.name for t in times if t.name not in names]


def latency_overlay(info: EngineInfo, times: list[LayerTime]) -> dict[str, float]:
    """ONNX node → ms; a fused layer's time is shared equally among its nodes so sums hold."""
    by_name = {t.name: t.average_ms for t in times}
    result: dict[str, float] = {}
    for layer in info.layers:
        if layer.name in by_name and layer.onnx_nodes and not layer.region:
            share = by_name[layer.name] / len(layer.onnx_nodes)
            for node in layer.onnx_nodes:
                result[node] = result.get(node, 0.0) + share
    return result


def precision_overlay(info: EngineInfo) -> dict[str, str]:
    return {
        node: layer.precision or "unknown"
        for layer in info.layers
        if not layer.region
        for node in layer.onnx_nodes
    }


def _groups(info: EngineInfo) -> dict[str, frozenset[str]]:
    """ONNX node → the set of ONNX nodes fused with it into one layer."""
    result: dict[str, frozenset[str]] = {}
    for layer in info.layers:
        group = frozenset(layer.onnx_nodes)
        for node in layer.onnx_nodes:
            result[node] = group
    return result


def diff_engines(
    a: EngineInfo,
    b: EngineInfo,
    times_a: list[LayerTime] | None = None,
    times_b: list[LayerTime] | None = None,
) -> EngineDiff:
    """What changed from engine ``a`` to engine ``b``: layers, fusions, precisions, times."""
    names_a, names_b = a.by_name(), b.by_name()
    groups_a, groups_b = _groups(a), _groups(b)
    layer_a_of, layer_b_of = a.onnx_to_layer(), b.onnx_to_layer()
    fused: dict[tuple[str, str], FusionChange] = {}
    for node in sorted(set(groups_a) & set(groups_b)):
        if groups_a[node] != groups_b[node]:
            la, lb = layer_a_of[node], layer_b_of[node]
            fused.setdefault((la, lb), FusionChange(la, lb)).nodes.append(node)
    precision = []
    seen: set[tuple[str, str]] = set()
    for node in sorted(set(layer_a_of) & set(layer_b_of)):
        one, other = names_a[layer_a_of[node]], names_b[layer_b_of[node]]
        if (one.name, other.name) in seen or not one.precision or not other.precision:
            continue
        seen.add((one.name, other.name))
        if one.precision != other.precision:
            precision.append(PrecisionChange(one.name, other.name, one.precision, other.precision))
    return EngineDiff(
        added=[n for n in names_b if n not in names_a],
        removed=[n for n in names_a if n not in names_b],
        fused_differently=list(fused.values()),
        precision_changes=precision,
        onnx_only_in_a=sorted(set(groups_a) - set(groups_b)),
        onnx_only_in_b=sorted(set(groups_b) - set(groups_a)),
        # one side without a profile would read as "everything got faster"
        times=_time_deltas(times_a, times_b) if times_a and times_b else None,
    )


def _time_deltas(times_a: list[LayerTime], times_b: list[LayerTime]) -> TimeDeltas:
    ta = {t.name: t.average_ms for t in times_a}
    tb = {t.name: t.average_ms for t in times_b}
    common = [TimeDelta(n, ta[n], tb[n], tb[n] - ta[n]) for n in ta if n in tb]
    common.sort(key=lambda row: -abs(row.delta_ms))
    return TimeDeltas(
        total_a_ms=sum(ta.values()),
        total_b_ms=sum(tb.values()),
        common=common,
        only_a_ms=sum(v for n, v in ta.items() if n not in tb),
        only_b_ms=sum(v for n, v in tb.items() if n not in ta),
    )


def engine_text(info: EngineInfo, rows: list[LayerRow], top: int = 15) -> str:
    kinds: dict[str, int] = {}
    for layer in info.layers:  # the same grouping as the GUI summary: Reformat rows agree
        kinds[layer.kind] = kinds.get(layer.kind, 0) + 1
    precisions: dict[str, int] = {}
    for layer in info.layers:
        if not layer.is_reformat:
            precisions[layer.precision or "?"] = precisions.get(layer.precision or "?", 0) + 1
    fused = sum(1 for layer in info.layers if layer.myelin)
    in_myelin = f" ({fused} layers in them)" if fused else ""
    lines = [
        f"{info.path}: {len(info.layers)} layers"
        + ("" if info.detailed else " (names only: build with --profilingVerbosity=detailed)"),
        "  layer types: "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda x: -x[1])),
        "  output precision: " + ", ".join(f"{k} {v}" for k, v in sorted(precisions.items())),
        f"  reformat layers: {sum(1 for layer in info.layers if layer.is_reformat)}",
        f"  Myelin/ForeignNode regions: {myelin_region_count(info.layers)}" + in_myelin,
    ]
    timed = [(r.time_ms, r) for r in rows if r.time_ms is not None]
    if timed:
        total = sum(ms for ms, _ in timed)
        lines.append(f"  profiled time: {total:.4f} ms per inference; slowest layers:")
        for ms, row in sorted(timed, key=lambda pair: -pair[0])[:top]:
            lines.append(
                f"    {ms:9.4f} ms {row.percent or 0.0:5.1f}%  "
                f"{row.out_precision or '?':5s} {row.type[:18]:18s} {row.name[:70]}"
            )
    return "\n".join(lines)
