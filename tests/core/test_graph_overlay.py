"""Overlays: categories, colormaps, aggregation for groups, JSON files with clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest

from deploylens.core.errors import UserError
from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.overlay import (
    group_size_overlay,
    load_overlay_json,
    op_type_overlay,
    overlay_from_mapping,
)
from deploylens.core.graph.search import search


@pytest.fixture
def ir(samples: Path):
    return build_model_ir(onnx.load(samples / "small_cnn.torchscript.onnx"))


def test_op_type_overlay_is_categorical(ir) -> None:
    overlay = op_type_overlay(ir)
    assert overlay.categorical and "Conv" in overlay.categories
    legend = dict(overlay.legend_entries())
    assert "Conv (3)" in legend and "Relu (3)" in legend
    convs = [i for i in range(ir.node_count) if ir.op_type(i) == "Conv"]
    assert overlay.aggregate_values(np.array(convs)) == overlay.categories.index("Conv")


def test_group_size_overlay_sums(ir) -> None:
    overlay = group_size_overlay(ir)
    assert overlay.aggregate_values(np.arange(ir.node_count)) == ir.op_count


def test_numeric_mapping_with_unmatched_names(ir) -> None:
    overlay, unmatched = overlay_from_mapping(
        ir,
        "error",
        {"/stem/stem.0/Conv": 0.5, "/head/head.2/Gemm": 2.0, "ghost": 1.0},
        aggregate="max",
    )
    assert unmatched == ["ghost"]
    assert overlay.value_range() == (0.5, 2.0)
    colors = overlay.node_colors()
    conv = next(i for i in range(ir.node_count) if ir.label(i) == "/stem/stem.0/Conv")
    relu = next(i for i in range(ir.node_count) if ir.op_type(i) == "Relu")
    assert tuple(colors[conv]) != tuple(colors[relu])  # valued vs. no value
    assert overlay.aggregate_values(np.arange(ir.node_count)) == 2.0
    assert math.isnan(overlay.aggregate_values(np.array([relu])))


def test_string_mapping_becomes_categories(ir) -> None:
    overlay, _ = overlay_from_mapping(
        ir, "layer", {"/stem/stem.0/Conv": "fused", "/stem/stem.2/Relu": "fused"}
    )
    assert overlay.categories == ["fused"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not a readable JSON"),
        ("[1, 2]", "one JSON object"),
        ('{"a": [1]}', "values must be numbers or strings"),
        ('{"nobody": 1}', "is a node of this graph"),
    ],
)
def test_bad_overlay_files(ir, tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "o.json"
    path.write_text(content)
    with pytest.raises(UserError, match=fragment):
        load_overlay_json(path, ir)


def test_overlay_file(ir, tmp_path: Path) -> None:
    path = tmp_path / "latency.json"
    path.write_text(json.dumps({ir.label(i): float(i) for i in range(ir.node_count)}))
    overlay, unmatched = load_overlay_json(path, ir)
    assert overlay.name == "latency" and unmatched == []


def test_search_by_name_op_and_tensor(ir) -> None:
    hits = search(ir, "gemm")
    assert {h.field for h in hits} >= {"name", "op"}
    tensor_hits = search(ir, ir.strings[int(ir.edge_tensor[3])])
    assert any(h.field == "tensor" for h in tensor_hits)
    assert search(ir, "   ") == []


def test_grouped_aggregation_matches_per_group_brute_force() -> None:
    """The graph view colours collapsed groups through ``aggregate_by``; it must agree with
    aggregating each group's members on its own, for every aggregate and for categories."""
    from deploylens.core.graph.overlay import Overlay

    rng = np.random.default_rng(4)
    values = rng.normal(size=500)
    values[rng.random(500) < 0.1] = np.nan
    owner = rng.integers(-1, 40, 500)
    for aggregate in ("mean", "sum", "max", "min"):
        overlay = Overlay("x", values, aggregate=aggregate)
        grouped = overlay.aggregate_by(owner, 40)
        for group in range(40):
            members = np.flatnonzero(owner == group)
            expected = overlay.aggregate_values(members)
            finite = values[members][np.isfinite(values[members])]
            reference = getattr(np, aggregate)(finite) if finite.size else np.nan
            assert np.allclose(grouped[group], reference, equal_nan=True), aggregate
            assert np.allclose(grouped[group], expected, equal_nan=True), aggregate
    categories = rng.integers(-1, 5, 500).astype(float)
    overlay = Overlay("op", categories, [f"op{i}" for i in range(5)], aggregate="mode")
    grouped = overlay.aggregate_by(owner, 40)
    for group in range(40):
        picked = categories[(owner == group) & (categories >= 0)].astype(int)
        expected = int(np.bincount(picked).argmax()) if picked.size else -1
        assert grouped[group] == expected


def test_meaningful_categories_keep_their_colours(ir) -> None:
    """Support painted blocked nodes blue and supported ones orange (palette order): a word
    that means failing is red and one that means fine is green, in every overlay."""
    from deploylens.core.graph.overlay import SEMANTIC_COLORS

    names = [ir.label(i) for i in range(ir.node_count)]
    mapping = {name: ("blocked" if i % 3 == 0 else "supported") for i, name in enumerate(names)}
    overlay, _ = overlay_from_mapping(ir, "support", mapping)
    colours = dict((label.split(" (")[0], rgb) for label, rgb in overlay.legend_entries())
    assert colours == {"blocked": SEMANTIC_COLORS["red"], "supported": SEMANTIC_COLORS["green"]}
    neutral = op_type_overlay(ir).category_colors()
    assert not {tuple(c) for c in neutral.tolist()} & set(SEMANTIC_COLORS.values())


def test_legend_follows_the_scale_it_is_given(ir) -> None:
    overlay, _ = overlay_from_mapping(ir, "ms", {ir.label(0): 1.0, ir.label(1): 3.0})
    assert [label for label, _ in overlay.legend_entries()][::4] == ["1", "3"]
    wider = overlay.legend_entries(value_range=(0.0, 40.0))
    assert [label for label, _ in wider][::4] == ["0", "40"]
    assert wider[-1][1] == overlay.legend_entries()[-1][1]  # the top colour is the top value's


def test_a_limit_stretches_the_scale_and_is_named_in_the_legend() -> None:
    """Validate's errors far under their limit are painted as far under it (the scale reaches
    the limit) and the legend names the limit's step."""
    import numpy as np

    from deploylens.core.graph.overlay import Overlay

    values = np.array([1e-7, 2.4e-7, np.nan])
    plain = Overlay("e", values, log_scale=True)
    assert plain.value_range() == (1e-7, 2.4e-7)  # min→max: 2.4e-7 would be the top colour
    limited = Overlay("e", values, log_scale=True, limit=0.01)
    assert limited.value_range() == (1e-7, 0.01)
    top = limited.colors_for(np.array([0.01]))[0]
    assert not (limited.colors_for(values[:2]) == top).all(axis=1).any()
    labels = [label for label, _ in limited.legend_entries()]
    assert labels.count("0.01 (limit)") == 1 and len(labels) == 5  # the top step is the limit
    above = Overlay("e", np.array([0.1, 0.5]), log_scale=True, limit=0.01)
    assert above.value_range() == (0.01, 0.5)
