"""Graph IR and hierarchy on real exports (dynamo name scopes, TorchScript names) and on
subgraphs, functions and flat graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from deploylens.core.graph.hierarchy import SEP, parse_name_scopes, path_key, tree_from_keys
from deploylens.core.graph.ir import (
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    OP,
    OUTER_VALUE,
    build_ir,
    build_model_ir,
)
from tests.helpers.onnx_models import chain_model, function_model, if_model


def test_dynamo_export_hierarchy_from_name_scopes(samples: Path) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.dynamo.onnx"))
    assert ir.hierarchy == "name_scopes"
    top = {ir.groups.name[g] for g in np.flatnonzero(ir.groups.parent == 0)}
    assert top == {"stem", "stage1", "stage2", "head"}
    conv = next(i for i in range(ir.node_count) if ir.op_type(i) == "Conv")
    assert ir.groups.path[ir.groups.node_group[conv]] == "stem/stem.1"  # BN folded into conv


def test_torchscript_export_hierarchy_from_node_names(samples: Path) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.torchscript.onnx"))
    assert ir.hierarchy == "node_names"
    conv = next(i for i in range(ir.node_count) if ir.label(i) == "/stem/stem.0/Conv")
    assert ir.groups.path[ir.groups.node_group[conv]] == "stem/stem.0"


def test_pseudo_nodes_and_edges(samples: Path) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.dynamo.onnx"))
    assert ir.label(np.flatnonzero(ir.kind == GRAPH_INPUT)[0]) == "image"
    assert ir.label(np.flatnonzero(ir.kind == GRAPH_OUTPUT)[0]) == "output"
    assert ir.op_count == 11
    # a chain: every op has a predecessor, weights are not edges
    assert len(ir.edge_src) == 12
    assert np.all(ir.edge_src < ir.edge_dst)


def test_flat_graph_and_level_cap() -> None:
    ir = build_ir(chain_model(2500, dims=(1, 8)).graph)
    assert ir.hierarchy == "node_names"  # "/b0/Relu" style names
    flat = chain_model(2500, dims=(1, 8))
    for node in flat.graph.node:
        node.name = ""
    ir = build_ir(flat.graph)
    assert ir.hierarchy == "flat"
    chunks = np.flatnonzero(ir.groups.parent == 0)
    assert len(chunks) == 3 and ir.groups.synthetic[chunks].all()
    assert np.bincount(ir.groups.node_group, minlength=ir.groups.count)[chunks].max() <= 1000


def test_level_cap_with_subgroups() -> None:
    paths = [(f"m{i}",) for i in range(2600)] + [()] * 10
    tree = tree_from_keys([path_key(p) for p in paths], range(len(paths)), SEP, max_children=1000)
    children = np.bincount(tree.parent[1:], minlength=tree.count) + np.bincount(
        tree.node_group, minlength=tree.count
    )
    assert children.max() <= 1000
    assert tree.depth.max() == 2  # module groups now sit under chunks


def test_subgraphs_are_enterable_with_outer_values() -> None:
    model = if_model()
    ir = build_model_ir(model)
    (if_node,) = [i for i in range(ir.node_count) if ir.op_type(i) == "If"]
    branches = dict(ir.subgraphs[if_node])
    assert set(branches) == {"then_branch", "else_branch"}
    inner = build_ir(branches["else_branch"], title="else_branch")
    assert inner.op_count == 1 and inner.subgraphs  # the nested If
    nested = build_ir(inner.subgraphs[0][0][1])
    assert nested.op_count == 1


def test_outer_scope_values_become_outer_nodes() -> None:
    body = onnx.helper.make_graph(
        [onnx.helper.make_node("Add", ["outer_x", "outer_x"], ["y"])],
        "body",
        [],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    ir = build_ir(body)
    assert list(ir.kind) == [OP, OUTER_VALUE, GRAPH_OUTPUT]
    assert len(ir.edge_src) == 3  # outer → Add twice, Add → output


def test_local_function_can_be_entered() -> None:
    ir = build_model_ir(function_model())
    (node,) = np.flatnonzero(ir.kind == OP)
    function = ir.function_for(int(node))
    assert function is not None
    body = build_ir(function, title="custom::DoubleRelu")
    assert body.op_count == 2 and body.kind[0] == GRAPH_INPUT


def test_reachability(samples: Path) -> None:
    ir = build_model_ir(onnx.load(samples / "small_cnn.dynamo.onnx"))
    first_relu = next(i for i in range(ir.node_count) if ir.op_type(i) == "Relu")
    down = ir.reachable(first_relu, downstream=True)
    up = ir.reachable(first_relu, downstream=False)
    assert set(down) & set(up) == {first_relu}
    assert len(down) + len(up) - 1 == ir.node_count


def test_name_scope_parsing() -> None:
    assert parse_name_scopes("['', 'layer1', 'layer1.0', 'conv2d']") == ("layer1", "layer1.0")
    assert parse_name_scopes("['', \"it's\", 'x']") == ("it's",)
    assert parse_name_scopes("not a list") == ()


def test_nodes_that_only_make_a_weight_are_drawn_inside_their_consumer() -> None:
    """TorchScript writes an Identity per shared weight and MobileNetV2's graph showed 39 of
    them in one row (Netron lists weights inside the node). An Identity of an initializer and a
    Constant are folded into their consumers: no box, no edge, a "weight" row in the consumer's
    properties; an Identity of a computed tensor, or one that is a graph output, stays a node."""
    from onnx import TensorProto, helper, numpy_helper

    from deploylens.core.graph.details import node_sections

    w = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["w"], ["w_shared"], name="share_w"),
            helper.make_node("Constant", [], ["bias"], name="make_bias",
                             value=numpy_helper.from_array(np.zeros(4, np.float32))),
            helper.make_node("Conv", ["x", "w_shared", "bias"], ["y"], name="conv"),
            helper.make_node("Identity", ["y"], ["z"], name="pass_y"),  # computed: stays
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [w],
    )  # fmt: skip
    ir = build_model_ir(helper.make_model(graph))
    labels = [ir.label(i) for i in range(ir.node_count)]
    assert "share_w" not in labels and "make_bias" not in labels
    assert "conv" in labels and "pass_y" in labels and ir.op_count == 2
    assert set(ir.folded) == {"w_shared", "bias"}
    conv = labels.index("conv")
    assert int(np.count_nonzero(ir.edge_dst == conv)) == 1  # only x: the weights are inside
    rows = {row[0]: row for section in node_sections(ir, conv) for row in section.rows}
    assert rows["w_shared"][2] == "weight (Identity w)" and "[4, 3, 1, 1]" in rows["w_shared"][1]
    assert rows["bias"][2].startswith("weight (Constant")


def test_column_built_ir_matches_one_node_at_a_time() -> None:
    """The IR is built column by column (edges from flattened input lists, each edge's tensor
    its producer's output); here checked against the plain per-node reading of the same
    graph, with the cases the columns must keep: a folded Identity weight, an absent optional
    input (""), a value from nowhere (an outer value), a graph output that is also consumed,
    duplicate names."""
    from onnx import TensorProto, helper

    weight = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    nodes = [
        helper.make_node("Identity", ["w"], ["w_id"], name="/enc/Identity"),
        helper.make_node("Add", ["x", "w_id"], ["a"], name="/enc/layer/Add"),
        helper.make_node("Clip", ["a", "", "outer"], ["c"], name="/enc/layer/Clip"),
        helper.make_node("Relu", ["c"], ["r"], name="/dec/Relu"),
        helper.make_node("Relu", ["r"], ["r2"], name="/dec/Relu"),  # same name twice
        helper.make_node("Mul", ["r2", "outer"], ["y"], name=""),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in ("y", "r")],
        [weight],
    )
    ir = build_ir(graph)
    ops = [ir.op_type(i) for i in range(ir.node_count)]
    assert ops == ["Input", "Add", "Clip", "Relu", "Relu", "Mul", "Outer", "Output", "Output"]
    assert ir.folded == {"w_id": 0} and ir.label(5) == "Mul_5"
    edges = {(ir.label(s), ir.label(d), ir.strings[t])
             for s, d, t in zip(ir.edge_src, ir.edge_dst, ir.edge_tensor, strict=True)}  # fmt: skip
    expected = [
        ("x", "/enc/layer/Add", "x"),
        ("/enc/layer/Add", "/enc/layer/Clip", "a"),
        ("outer", "/enc/layer/Clip", "outer"),
        ("/enc/layer/Clip", "/dec/Relu", "c"),
        ("/dec/Relu", "/dec/Relu", "r"),
        ("/dec/Relu", "Mul_5", "r2"),
        ("outer", "Mul_5", "outer"),
        ("Mul_5", "y", "y"),
        ("/dec/Relu", "r", "r"),
    ]
    assert edges == set(expected) and len(ir.edge_src) == len(expected)
    assert [ir.groups.path[g] for g in ir.groups.node_group] == [
        "",
        "enc/layer",
        "enc/layer",
        "dec",
        "dec",
        "",
        "",
        "",
        "",
    ]
    # node names and the tensors nodes make are stored as they are (``extend``: nothing looks
    # them up by text); the pseudo nodes' names, ops and domains are interned
    strings = ir.strings
    assert strings.find("x") is not None and strings.find("Relu") is not None
    start = len(strings)
    assert strings.extend(["y", "new", "new"]) == range(start, start + 3)
    assert [strings[i] for i in range(start, start + 3)] == ["y", "new", "new"]
    assert strings.find("new") is None


def test_group_tree_from_shared_paths_equals_one_path_per_node() -> None:
    per_node = [("a", "b"), (), ("a",), ("c", "d", "e"), ("a", "b"), ("c",)]
    shared = [("c", "d", "e"), ("a", "b"), (), ("a",), ("c",)]
    index = [1, 2, 3, 0, 1, 4]
    one = tree_from_keys([path_key(p) for p in per_node], range(len(per_node)), SEP)
    two = tree_from_keys([path_key(p) for p in shared], index, SEP)
    assert one.name == two.name and one.path == two.path
    assert np.array_equal(one.parent, two.parent) and np.array_equal(one.node_group, two.node_group)


def test_a_name_prefix_key_reads_the_module_path_as_the_node_name_does() -> None:
    """The clean prefix is its own key (no tuple per prefix); every other one goes through
    ``path_from_node_name`` — empty parts, a part over 512 characters, over 256 levels."""
    from deploylens.core.graph.hierarchy import name_prefix_key, path_from_node_name

    prefixes = ["/a/b", "/a//b", "a/b", "/", "", "/a/b/", "/x" * 300, "/" + "p" * 600 + "/q",
                "/layers.0/attn", "//lead"]  # fmt: skip
    for prefix in prefixes:
        path = path_from_node_name(prefix + "/")
        assert name_prefix_key(prefix) == "".join("/" + part for part in path), prefix
    # the keys' tree is the tuples' tree: same groups, parents and node groups
    paths = [path_from_node_name(prefix + "/") for prefix in prefixes]
    keys = [name_prefix_key(prefix) for prefix in prefixes]
    node_key = [3, 0, 1, 6, 2, 8, 0, 9, 7, 4, 5]
    by_key = tree_from_keys(keys, node_key, "/")
    by_tuple = tree_from_keys([path_key(path) for path in paths], node_key, SEP)
    assert by_key.path == by_tuple.path and by_key.name == by_tuple.name
    assert np.array_equal(by_key.parent, by_tuple.parent)
    assert np.array_equal(by_key.node_group, by_tuple.node_group)
    assert np.array_equal(by_key.depth, by_tuple.depth)


def test_distinct_item_pairs_are_the_rows_np_unique_gives() -> None:
    """A level's edges between items, each pair once, self-pairs dropped, in row order: as
    ``np.unique(axis=0)`` gave them, from random item ids (-1: none) the test makes."""
    from deploylens.core.graph.scene import _distinct_pairs

    rng = np.random.default_rng(7)
    for items in (1, 3, 50, 1000):
        src, dst = rng.integers(-1, items, 4000), rng.integers(-1, items, 4000)
        rows = np.unique(np.stack([src, dst], axis=1), axis=0)
        assert np.array_equal(_distinct_pairs(src, dst, items), rows[rows[:, 0] != rows[:, 1]])
    assert _distinct_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), 0).shape == (0, 2)


def test_weights_are_named_as_netron_draws_them_in_their_node(samples: Path) -> None:
    """A Conv shows ``W⟨16×3×3×3⟩ B⟨16⟩`` inside its box (from the dims, never the data);
    TorchScript's Identity-passed weights and a Constant read the same; a node without
    weights shows none."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from deploylens.core.graph.details import weights_text
    from deploylens.core.graph.ir import OP, build_model_ir

    for name in ("small_cnn.dynamo.onnx", "small_cnn.torchscript.onnx"):
        ir = build_model_ir(onnx.load(samples / name))
        shown = {weights_text(ir, n) for n in range(ir.node_count) if ir.kind[n] == OP}
        assert {"W⟨16×3×3×3⟩ B⟨16⟩", "B⟨10×64⟩ C⟨10⟩", ""} <= shown, name
    weight = numpy_helper.from_array(np.ones((4, 8), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
            np.ones(8, np.float32), "cv")),
         helper.make_node("MatMul", ["x", "w"], ["y"]),
         helper.make_node("Add", ["y", "c"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8])], [weight],
    )  # fmt: skip
    ir = build_model_ir(helper.make_model(graph))
    by_op = {ir.op_type(n): weights_text(ir, n) for n in range(ir.node_count) if ir.kind[n] == OP}
    assert by_op["MatMul"] == "B⟨4×8⟩"
    assert by_op["Add"] == "B⟨8⟩"  # the Constant's own dims
