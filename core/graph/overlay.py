"""Overlays: a value or a category per node, painted on the graph with a legend.

Later panels attach their results here (support status, numeric error, TensorRT layer, kernel
latency). Collapsed groups show an aggregate of their nodes (mean, sum, max, or the most common
category).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.files import read_json
from deploylens.core.graph.ir import OP, GraphIR

# Viridis at 9 anchors (matplotlib's data, sampled), interpolated in between.
_VIRIDIS = np.array(
    [
        [68, 1, 84],
        [71, 44, 122],
        [59, 81, 139],
        [44, 113, 142],
        [33, 144, 141],
        [39, 173, 129],
        [92, 200, 99],
        [170, 220, 50],
        [253, 231, 37],
    ],
    dtype=float,
)
CATEGORY_COLORS = np.array(
    [
        [78, 121, 167],
        [242, 142, 43],
        [225, 87, 89],
        [118, 183, 178],
        [89, 161, 79],
        [237, 201, 72],
        [176, 122, 161],
        [255, 157, 167],
        [156, 117, 95],
        [186, 176, 172],
        [31, 119, 180],
        [148, 103, 189],
        [140, 86, 75],
        [23, 190, 207],
        [188, 189, 34],
        [127, 127, 127],
    ],
    dtype=np.uint8,
)
NO_VALUE = np.array([236, 236, 236], dtype=np.uint8)
# Categories whose word carries a meaning keep its colour in every overlay: failing red, fine
# green, undecided amber (support painted blocked nodes blue and supported ones orange)
SEMANTIC_COLORS = {
    "red": (214, 39, 40),
    "green": (44, 160, 44),
    "amber": (240, 170, 30),
}
SEMANTIC_WORDS = {
    "red": ("blocked", "fail", "failed", "failing", "unsupported", "not supported", "error",
            "differs", "diverges", "mismatch", "removed"),
    "green": ("supported", "ok", "pass", "passed", "matches", "same", "runs", "kept"),
    "amber": ("unknown", "needs plugin", "plugin", "warning", "inconclusive", "changed",
              "untested"),
}  # fmt: skip


def semantic_color(category: str) -> tuple[int, int, int] | None:
    """The colour a category's meaning asks for (its first words), else None."""
    word = category.strip().lower().split(":")[0].strip()
    for colour, words in SEMANTIC_WORDS.items():
        if word in words:
            return SEMANTIC_COLORS[colour]
    return None


AGGREGATES = ("mean", "sum", "max", "min", "mode")


def viridis(t: np.ndarray) -> np.ndarray:
    t = np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    low = np.floor(t).astype(int)
    high = np.minimum(low + 1, len(_VIRIDIS) - 1)
    frac = (t - low)[:, None]
    result: np.ndarray = (_VIRIDIS[low] * (1 - frac) + _VIRIDIS[high] * frac).astype(np.uint8)
    return result


@dataclass
class Overlay:
    """Per-node values (float, NaN = none) or categories (int, -1 = none) for one ``GraphIR``."""

    name: str
    values: np.ndarray
    categories: list[str] = field(default_factory=list)  # non-empty ⇒ categorical
    legend: str = ""
    aggregate: str = "mean"
    log_scale: bool = False
    # A pass/fail threshold (validate's rel L2 limit): the scale always reaches it, so values far
    # under it are painted as far under it, never as the top colour of a min→max stretch.
    limit: float | None = None

    @property
    def categorical(self) -> bool:
        return bool(self.categories)

    def value_range(self) -> tuple[float, float]:
        finite = self.values[np.isfinite(self.values)] if not self.categorical else np.array([])
        if not finite.size:
            return self.with_limit(0.0, 1.0) if self.limit is not None else (0.0, 1.0)
        return self.with_limit(float(finite.min()), float(finite.max()))

    def with_limit(self, low: float, high: float) -> tuple[float, float]:
        """``(low, high)`` stretched to include the limit, when the overlay has one."""
        if self.limit is None or not math.isfinite(self.limit):
            return low, high
        return min(low, self.limit), max(high, self.limit)

    def colors_for(
        self, values: np.ndarray, value_range: tuple[float, float] | None = None
    ) -> np.ndarray:
        """RGB for values on this overlay's scale (or on ``value_range``, for group sums)."""
        out = np.tile(NO_VALUE, (len(values), 1))
        if self.categorical:
            known = values >= 0
            out[known] = self.category_colors()[values[known].astype(int)]
            return out
        low, high = value_range or self.value_range()
        finite = np.isfinite(values)
        scaled = values[finite]
        if self.log_scale:
            scaled, low, high = (
                np.log10(np.maximum(scaled, 1e-30)),
                math.log10(max(low, 1e-30)),
                math.log10(max(high, 1e-30)),
            )
        span = (high - low) or 1.0
        out[finite] = viridis((scaled - low) / span)
        return out

    def category_colors(self) -> np.ndarray:
        """(C, 3) colour of each category: its meaning's (failing red, fine green, undecided
        amber) where its word has one, else the palette's, skipping the meaning colours so a
        neutral category never reads as red or green."""
        neutral = [
            _rgb(c) for c in CATEGORY_COLORS
            if _rgb(c) not in {(225, 87, 89), (89, 161, 79)}
        ]  # fmt: skip
        colours: list[tuple[int, int, int]] = []
        cycle = 0
        for category in self.categories:
            meant = semantic_color(category)
            if meant is None:
                meant = neutral[cycle % len(neutral)]
                cycle += 1
            colours.append(meant)
        return np.array(colours or [(0, 0, 0)], dtype=np.uint8)

    def node_colors(self) -> np.ndarray:
        return self.colors_for(self.values)

    def aggregate_values(self, members: np.ndarray) -> float:
        """One value for a collapsed group from its member nodes."""
        owner = np.full(len(self.values), -1, np.int64)
        owner[members] = 0
        return float(self.aggregate_by(owner, 1)[0])

    def aggregate_by(self, owner: np.ndarray, count: int) -> np.ndarray:
        """The aggregate of every group at once (``owner[n]``: node n's group in ``range(count)``,
        −1 for none): the most common category, or sum/mean/max/min of the finite values; −1 /
        NaN for a group with nothing to aggregate. The graph view colours collapsed groups with
        it — one vectorized pass, never a loop over groups."""
        valid = owner >= 0
        values = self.values[valid]
        groups = owner[valid]
        result = np.full(count, -1.0 if self.categorical else np.nan)
        if self.categorical:
            known = values >= 0
            if known.any():
                categories = values[known].astype(np.int64)
                width = int(categories.max()) + 1
                table = np.bincount(groups[known] * width + categories, minlength=count * width)
                table = table.reshape(count, width)
                has = table.sum(axis=1) > 0
                result[has] = table[has].argmax(axis=1)
            return result
        finite = np.isfinite(values)
        groups, values = groups[finite], values[finite]
        if not len(values):
            return result
        if self.aggregate in ("sum", "mean"):
            total = np.bincount(groups, weights=values, minlength=count)
            n = np.bincount(groups, minlength=count)
            result[n > 0] = (total if self.aggregate == "sum" else total / np.maximum(n, 1))[n > 0]
        else:
            reducer = np.maximum if self.aggregate == "max" else np.minimum
            accumulated = np.full(count, -np.inf if self.aggregate == "max" else np.inf)
            reducer.at(accumulated, groups, values)
            done = np.isfinite(accumulated)
            result[done] = accumulated[done]
        return result

    def legend_entries(
        self, limit: int = 12, value_range: tuple[float, float] | None = None
    ) -> list[tuple[str, tuple[int, int, int]]]:
        """What the legend lists: each category's colour, or five steps of the numeric scale —
        ``value_range`` being the one the view paints with (leaves and groups alike)."""
        if self.categorical:
            counts = np.bincount(
                self.values[self.values >= 0].astype(int), minlength=len(self.categories)
            )
            top = np.argsort(-counts, kind="stable")[:limit]
            palette = self.category_colors()
            return [
                (f"{self.categories[i]} ({counts[i]})", _rgb(palette[i])) for i in top if counts[i]
            ]
        low, high = value_range or self.value_range()
        if self.log_scale and high > 0:  # even steps of the scale painted: decades, not µs
            steps = np.geomspace(max(low, high * 1e-12, 1e-30), high, 5)
        else:
            steps = np.linspace(low, high, 5)
        labels = [f"{v:.4g}" for v in steps]
        if self.limit is not None and low <= self.limit <= high:  # the threshold, named
            near = np.isclose(steps, self.limit, rtol=1e-6, atol=0.0)
            steps = np.sort(np.append(steps[~near], self.limit))
            labels = [f"{v:.4g} (limit)" if v == self.limit else f"{v:.4g}" for v in steps.tolist()]
        colors = self.colors_for(steps, (low, high))
        return [(label, _rgb(rgb)) for label, rgb in zip(labels, colors, strict=True)]


def _rgb(color: Any) -> tuple[int, int, int]:
    return int(color[0]), int(color[1]), int(color[2])


def op_type_overlay(ir: GraphIR) -> Overlay:
    """Categories by op type, from the interned op ids (one lookup per distinct op, not per
    node: 100k nodes took 0.07 s one by one)."""
    ops = np.flatnonzero(ir.kind == OP)
    op_ids, of_node = np.unique(ir.op[ops], return_inverse=True)
    names = [ir.strings[int(i)] for i in op_ids]
    categories = sorted(set(names))
    index = np.array([categories.index(name) for name in names] or [0], np.float64)
    values = np.full(ir.node_count, -1.0)  # graph inputs/outputs carry no op type
    values[ops] = index[of_node]
    return Overlay("op type", values, categories, legend="operator type", aggregate="mode")


def group_size_overlay(ir: GraphIR) -> Overlay:
    values = np.where(ir.kind == OP, 1.0, np.nan)
    return Overlay(
        "node count per group", values, legend="nodes (collapsed groups: total)", aggregate="sum"
    )


def overlay_from_mapping(
    ir: GraphIR,
    name: str,
    mapping: Mapping[str, object],
    legend: str = "",
    aggregate: str = "mean",
) -> tuple[Overlay, list[str]]:
    """Overlay from ``{node_name: value}``; numbers give a colormap, strings categories.

    Returns the overlay and the names that matched no node (reported, not fatal).
    """
    if aggregate not in AGGREGATES:
        raise UserError(f"Unknown aggregate '{aggregate}'; use one of {', '.join(AGGREGATES)}.")
    by_name: dict[str, list[int]] = {}
    for node in range(ir.node_count):
        by_name.setdefault(ir.label(node), []).append(node)
    unmatched = [key for key in mapping if key not in by_name]
    items = [(by_name[k], v) for k, v in mapping.items() if k in by_name]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for _, v in items)
    if numeric:
        values = np.full(ir.node_count, np.nan)
        for nodes, value in items:
            values[nodes] = float(value)  # type: ignore[arg-type]
        return Overlay(name, values, legend=legend or name, aggregate=aggregate), unmatched
    categories = sorted({str(v) for _, v in items})
    index = {c: i for i, c in enumerate(categories)}
    values = np.full(ir.node_count, -1.0)
    for nodes, value in items:
        values[nodes] = index[str(value)]
    return Overlay(name, values, categories, legend=legend or name, aggregate="mode"), unmatched


def load_overlay_json(path: str | Path, ir: GraphIR) -> tuple[Overlay, list[str]]:
    """Read ``{node_name: value}`` from a JSON file, with clear errors for bad files."""
    path = Path(path)
    data = read_json(path, "JSON file")
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise UserError(f"{path.name} must hold one JSON object: {{node_name: value}}.")
    bad = [
        k for k, v in data.items() if not isinstance(v, int | float | str) or isinstance(v, bool)
    ]
    if bad:
        raise UserError(
            f"{path.name}: values must be numbers or strings; '{bad[0]}' has "
            f"{type(data[bad[0]]).__name__}."
        )
    overlay, unmatched = overlay_from_mapping(ir, path.stem, data)
    if len(unmatched) == len(data) and data:
        raise UserError(
            f"None of the {len(data)} names in {path.name} is a node of this graph "
            f"(e.g. '{unmatched[0]}')."
        )
    return overlay, unmatched
