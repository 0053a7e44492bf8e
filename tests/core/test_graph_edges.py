"""Edges into expanded groups: every connection of the model is drawn to the box that shows its
end, at every expansion — ResNet's skip connection (MaxPool → Add inside ``layer1.0``) used to
stop at the group's frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deploylens.core.graph.ir import build_model_ir
from deploylens.core.graph.scene import BOX_FRAME, BOX_NODE, GraphScene


@pytest.fixture(scope="module")
def residual_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stem, a max-pool and two residual blocks in named submodules, exported by TorchScript
    (``/layer1/layer1.0/Add`` style names make the groups)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(8, 8, 3, padding=1)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x: Any) -> Any:
            return self.relu(self.conv2(self.relu(self.conv1(x))) + x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.maxpool = nn.MaxPool2d(2)
            self.layer1 = nn.Sequential(Block(), Block())

        def forward(self, x: Any) -> Any:
            return self.layer1(self.maxpool(self.conv1(x)))

    path = tmp_path_factory.mktemp("residual") / "residual.onnx"
    torch.onnx.export(Net().eval(), (torch.rand(1, 3, 16, 16),), str(path), dynamo=False,
                      input_names=["x"])  # fmt: skip
    return path


def model_pairs(scene_model: GraphScene) -> set[tuple[int, int]]:
    ir = scene_model.ir
    return {(int(a), int(b)) for a, b in zip(ir.edge_src, ir.edge_dst, strict=True) if a != b}


def drawn_pairs(scene_model: GraphScene) -> set[tuple[int, int]]:
    """(src, dst) boxes of the drawn edges, as node indices where the box is a node."""
    scene = scene_model.scene()
    assert not np.any(scene.box_kind[scene.edge_src_box] == BOX_FRAME)  # frames are never ends
    assert not np.any(scene.box_kind[scene.edge_dst_box] == BOX_FRAME)
    return {
        (int(scene.box_ref[a]), int(scene.box_ref[b]))
        for a, b in zip(scene.edge_src_box, scene.edge_dst_box, strict=True)
    }


def test_full_expansion_draws_every_edge_of_the_model(residual_model: Path) -> None:
    import onnx

    model = GraphScene(build_model_ir(onnx.load(residual_model)))
    assert model.ir.groups.count > 3  # layer1, layer1.0, layer1.1 …
    model.expand_to_depth(32)
    scene = model.scene()
    assert np.all(scene.box_kind != 1)  # nothing left collapsed
    assert drawn_pairs(model) == model_pairs(model)
    assert len(scene.edge_src_box) == len(model_pairs(model))


def test_the_skip_connection_ends_at_the_add_inside_the_block(residual_model: Path) -> None:
    import onnx

    model = GraphScene(build_model_ir(onnx.load(residual_model)))
    ir = model.ir
    model.expand_to_depth(32)
    scene = model.scene()
    names = {ir.label(i): i for i in range(ir.node_count)}
    pool = names["/maxpool/MaxPool"]
    add = next(i for name, i in names.items() if name.endswith("layer1.0/Add"))
    assert (pool, add) in drawn_pairs(model)
    edge = next(
        k for k, (a, b) in enumerate(zip(scene.edge_src_box, scene.edge_dst_box, strict=True))
        if scene.box_ref[a] == pool and scene.box_ref[b] == add
    )  # fmt: skip
    points = scene.edge_points[scene.edge_offsets[edge] : scene.edge_offsets[edge + 1]]
    x0, y0, x1, _ = scene.box_rect[scene.node_box[add]]
    assert points[-1][1] == pytest.approx(y0) and x0 <= points[-1][0] <= x1  # at the Add's top
    assert scene.box_kind[scene.node_box[add]] == BOX_NODE


def test_partial_expansion_draws_each_visible_connection_once(residual_model: Path) -> None:
    import onnx

    model = GraphScene(build_model_ir(onnx.load(residual_model)))
    ir = model.ir
    for depth in range(4):
        model.expand_to_depth(depth)
        scene = model.scene()
        boxes = scene.node_box
        wanted = {
            (int(boxes[a]), int(boxes[b]))
            for a, b in zip(ir.edge_src, ir.edge_dst, strict=True)
            if boxes[a] != boxes[b]
        }
        drawn = set(zip(scene.edge_src_box.tolist(), scene.edge_dst_box.tolist(), strict=True))
        assert drawn == wanted, depth
