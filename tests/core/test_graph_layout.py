"""Layout invariants: ranks follow edges (but declared back edges), no overlaps, deterministic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.layout import NODE_GAP, layered_layout
from deploylens.core.graph.scene import BOX_FRAME, GraphScene, Scene


def random_dag(n: int, extra: int, seed: int, back: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = list(range(n - 1))
    dst = list(range(1, n))  # a chain keeps it connected
    a = rng.integers(0, n, extra)
    b = rng.integers(0, n, extra)
    keep = a < b
    src += a[keep].tolist()
    dst += b[keep].tolist()
    if back:
        src += rng.integers(n // 2, n, back).tolist()
        dst += rng.integers(0, n // 2, back).tolist()
    return np.array(src), np.array(dst)


@pytest.mark.parametrize(("n", "extra", "back"), [(10, 5, 0), (300, 400, 0), (500, 600, 20)])
def test_layout_invariants(n: int, extra: int, back: int) -> None:
    src, dst = random_dag(n, extra, seed=n, back=back)
    width = np.random.default_rng(1).uniform(40, 120, n)
    height = np.full(n, 30.0)
    layout = layered_layout(n, src, dst, width, height)
    forward = ~layout.back_edge
    assert np.all(layout.rank[src[forward]] < layout.rank[dst[forward]])
    assert np.all(layout.rank[src[layout.back_edge]] > layout.rank[dst[layout.back_edge]])
    assert layout.back_edge.sum() == back
    # no two boxes of a rank overlap: sorted by x, each gap >= NODE_GAP
    for r in np.unique(layout.rank):
        members = np.flatnonzero(layout.rank == r)
        members = members[np.argsort(layout.x[members])]
        left = layout.x[members] - width[members] / 2
        right = layout.x[members] + width[members] / 2
        assert np.all(left[1:] - right[:-1] >= NODE_GAP - 1e-6)
    # same rank ⇒ same y; deeper rank ⇒ lower on screen
    assert np.all(np.diff(layout.y[np.argsort(layout.rank)]) >= 0)
    # polylines start at the source and end at the target
    for e in range(len(src)):
        points = layout.edge_polyline(e)
        assert np.isclose(points[0, 0], layout.x[src[e]])
        assert np.isclose(points[-1, 0], layout.x[dst[e]])


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_a_long_edge_never_passes_through_another_box(seed: int) -> None:
    """A long edge slanted across a rank's band from its source to its first dummy and went
    through the box beside the dummy (the ViT block's Reshape → MatMul through Shape_1): it now
    slants only between ranks, where no box is."""
    from deploylens.core.graph.routing import crosses

    n = 120
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n - 8, 40)
    b = a + rng.integers(2, 8, 40)  # skips of a few ranks, as a network's (under the dummy cap)
    src, dst = np.r_[np.arange(n - 1), a], np.r_[np.arange(1, n), b]
    width, height = rng.uniform(40, 160, n), rng.choice([30.0, 46.0], n)
    layout = layered_layout(n, src, dst, width, height)
    rects = np.stack([layout.x - width / 2, layout.y - height / 2,
                      layout.x + width / 2, layout.y + height / 2], axis=1)  # fmt: skip
    every = np.arange(n)
    through = [
        e for e in range(len(src))
        if any(crosses(tuple(a), tuple(b), rects, {int(src[e]), int(dst[e])}, every)
               for a, b in zip(layout.edge_polyline(e)[:-1], layout.edge_polyline(e)[1:],
                               strict=True))
    ]  # fmt: skip
    assert through == []


def test_layout_is_deterministic() -> None:
    src, dst = random_dag(400, 500, seed=7, back=5)
    size = np.full(400, 60.0)
    one = layered_layout(400, src, dst, size, size / 2)
    two = layered_layout(400, src, dst, size, size / 2)
    assert np.array_equal(one.x, two.x) and np.array_equal(one.edge_points, two.edge_points)


def test_scene_nests_expanded_groups_without_overlap(samples) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.torchscript.onnx"))
    scene_model = GraphScene(ir)
    collapsed = scene_model.scene()
    assert len(collapsed.box_kind) == 6  # input, 4 modules, output
    scene_model.expand_to_depth(5)
    scene = scene_model.scene()
    rect = scene.box_rect
    # every op node is visible and every frame contains what it holds
    assert np.all(scene.node_box >= 0)
    for box in np.flatnonzero(scene.box_kind == BOX_FRAME):
        group = int(scene.box_ref[box])
        inside = np.flatnonzero(scene_model.anc[ir.groups.depth[group]] == group)
        for node in inside:
            child = rect[scene.node_box[node]]
            assert rect[box, 0] <= child[0] and child[2] <= rect[box, 2]
            assert rect[box, 1] <= child[1] and child[3] <= rect[box, 3]
    # siblings never overlap
    for depth in np.unique(scene.box_depth):
        same = rect[scene.box_depth == depth]
        for i in range(len(same)):
            for j in range(i + 1, len(same)):
                a, b = same[i], same[j]
                overlap = (a[0] < b[2]) and (b[0] < a[2]) and (a[1] < b[3]) and (b[1] < a[3])
                nested = (a[0] <= b[0] and b[2] <= a[2]) or (b[0] <= a[0] and a[2] <= b[2])
                assert not overlap or nested


def test_collapse_and_reveal(samples) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.dynamo.onnx"))
    scene_model = GraphScene(ir)
    gemm = next(i for i in range(ir.node_count) if ir.op_type(i) == "Gemm")
    assert scene_model.visible_group_of(gemm) >= 0
    scene_model.reveal(gemm)
    assert scene_model.visible_group_of(gemm) == -1
    box = scene_model.scene().node_box[gemm]
    assert scene_model.scene().box_ref[box] == gemm


def test_a_residual_blocks_skip_edge_goes_round_its_chain(tmp_path: Path) -> None:
    """The skip edge of a ResNet block entered the block's frame at the top and ran straight
    down to the Add — through the Conv → Relu → Conv chain, collinear with it, invisible. At
    full expansion no edge now passes through a node box other than its own two ends."""
    import itertools

    import onnx
    import torch

    from deploylens.core.graph.ir import build_model_ir
    from deploylens.core.graph.routing import crosses
    from deploylens.core.graph.scene import BOX_NODE, GraphScene

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(8, 8, 3, padding=1)
            self.relu = torch.nn.ReLU()
            self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.conv2(self.relu(self.conv1(x))) + x)

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), Block(), Block()).eval()
    path = tmp_path / "res.onnx"
    torch.onnx.export(net, (torch.rand(1, 3, 16, 16),), str(path), dynamo=False)
    model = GraphScene(build_model_ir(onnx.load(path)))
    model.expand_to_depth(8)
    scene = model.scene()
    nodes = np.flatnonzero(scene.box_kind == BOX_NODE)
    offsets = scene.edge_offsets
    through = []
    for e in range(len(offsets) - 1):
        points = [tuple(p) for p in scene.edge_points[offsets[e] : offsets[e + 1]].tolist()]
        ends = {int(scene.edge_src_box[e]), int(scene.edge_dst_box[e])}
        if any(crosses(a, b, scene.box_rect, ends, nodes) for a, b in itertools.pairwise(points)):
            through.append(e)
    assert len(offsets) > 10 and through == []
    # and the skip edge and the chain enter the Add at their own ports, not on one line: the
    # last 12 px of both were drawn on top of each other at the box's top centre
    for add in (n for n in nodes if model.ir.op_type(int(scene.box_ref[n])) == "Add"):
        into = [e for e in range(len(offsets) - 1) if scene.edge_dst_box[e] == add]
        ports = {float(scene.edge_points[offsets[e + 1] - 1][0]) for e in into}
        x0, y0, x1, _ = scene.box_rect[add]
        assert len(into) == 2 and len(ports) == 2 and all(x0 < x < x1 for x in ports), into
        last_legs = [scene.edge_points[offsets[e + 1] - 2 : offsets[e + 1]] for e in into]
        assert all(leg[1][1] == y0 for leg in last_legs)  # each still ends on the box's top


def _proper_crossings(scene: Scene) -> int:
    """Segments of two edges with no common end box that cross each other."""
    import itertools

    offsets = scene.edge_offsets
    segments = []
    for e in range(len(offsets) - 1):
        points = scene.edge_points[offsets[e] : offsets[e + 1]].tolist()
        ends = {int(scene.edge_src_box[e]), int(scene.edge_dst_box[e])}
        segments += [(e, ends, a, b) for a, b in itertools.pairwise(points)]

    def side(p: list[float], q: list[float], r: list[float]) -> float:
        return float(np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])))

    count = 0
    for (e, ends, a, b), (f, other, c, d) in itertools.combinations(segments, 2):
        if e != f and not ends & other:
            count += side(a, b, c) * side(a, b, d) < 0 and side(c, d, a) * side(c, d, b) < 0
    return count


def test_a_transformer_blocks_attention_is_drawn_with_as_few_crossings_as_dot(
    tmp_path: Path,
) -> None:
    """ViT's encoder block at full expansion had 4 edge crossings where Graphviz dot draws 1
    (bench/graph_readability.py): the sweeps moved every rank at once from the old order of
    its neighbours, so Q's, K's and V's long edges stayed tangled. Rank by rank it is 1."""
    import torch
    from torchvision.models.vision_transformer import EncoderBlock

    path = tmp_path / "block.onnx"
    block = EncoderBlock(4, 64, 128, 0.0, 0.0).eval()
    torch.onnx.export(block, (torch.rand(1, 16, 64),), str(path), dynamo=False, opset_version=17)
    model = GraphScene(build_model_ir(onnx.load(path)))
    model.expand_to_depth(64)
    scene = model.scene()
    assert len(scene.edge_offsets) > 60 and _proper_crossings(scene) <= 1
