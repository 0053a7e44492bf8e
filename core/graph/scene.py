"""The visible scene of a graph: which groups are expanded, laid out level by level.

A group's content is laid out only when the group is expanded, and each level's layout is cached
until something inside it changes, so a 100k-node model opens with its top level only and an
expansion re-lays out one group plus its ancestors. Output is flat NumPy arrays ready to paint.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from deploylens.core.graph.details import weights_text
from deploylens.core.graph.hierarchy import ROOT
from deploylens.core.graph.ir import OP, GraphIR
from deploylens.core.graph.layout import RANK_GAP, LayeredLayout, layered_layout
from deploylens.core.graph.routing import around, crosses, spread_entries

NODE_HEIGHT = 30.0
WEIGHTS_LINE = 14.0  # a node that takes weights is a line taller: W⟨…⟩ B⟨…⟩ under its op type
WEIGHTS_LEVEL_MAX = 20_000  # a level with more nodes keeps plain boxes (no text is read there)
GROUP_HEIGHT = 44.0
GROUP_HEADER = 24.0
GROUP_PAD = 14.0
NONE = np.zeros(0, dtype=np.int64)
CHAR_WIDTH = 7.0

BOX_NODE, BOX_GROUP, BOX_FRAME = 0, 1, 2  # op/pseudo node, collapsed group, expanded group


@dataclass
class Scene:
    """Absolute geometry of everything visible, as arrays (one row per box / edge)."""

    box_kind: np.ndarray  # int8 [B]
    box_ref: np.ndarray  # int32 [B]: node index (BOX_NODE) or group id
    box_rect: np.ndarray  # float [B, 4]: x0, y0, x1, y1
    box_depth: np.ndarray  # int32 [B]: nesting depth (frames behind their content)
    edge_offsets: np.ndarray  # int64 [E+1]
    edge_points: np.ndarray  # float [K, 2]
    edge_rect: np.ndarray  # float [E, 4] bounding boxes for culling
    edge_src_box: np.ndarray  # int32 [E]
    edge_dst_box: np.ndarray  # int32 [E]
    node_box: np.ndarray  # int32 [N]: the box that shows each node (itself or a collapsed group)
    width: float
    height: float
    group_box: dict[int, int] = field(default_factory=dict)
    edge_tensor: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@dataclass
class _Level:
    items_node: np.ndarray  # int32 [n]: node index or -1
    items_group: np.ndarray  # int32 [n]: group id or -1
    width: np.ndarray
    height: np.ndarray
    layout: LayeredLayout
    edge_items: tuple[np.ndarray, np.ndarray]
    children: dict[int, _Level]  # item index -> expanded subgroup level


class GraphScene:
    """Expansion state plus cached per-group layouts for one ``GraphIR``."""

    def __init__(self, ir: GraphIR) -> None:
        self.ir = ir
        tree = ir.groups
        self.anc = tree.ancestors_by_depth()
        self.node_depth = tree.depth[tree.node_group]
        self.expanded: set[int] = {ROOT}
        self._cache: dict[int, _Level] = {}
        self._scene: Scene | None = None
        counts = np.zeros(tree.count, dtype=np.int64)
        for level in range(self.anc.shape[0]):
            row = self.anc[level]
            counts += np.bincount(row[row >= 0], minlength=tree.count)
        self.group_size = counts  # nodes inside each group, recursively
        first = np.full(tree.count, np.iinfo(np.int64).max, dtype=np.int64)
        indices = np.arange(ir.node_count)
        for level in range(self.anc.shape[0]):
            row = self.anc[level]
            inside = row >= 0
            np.minimum.at(first, row[inside], indices[inside])
        self.group_first = first
        self.child_groups: dict[int, list[int]] = {}
        for g in range(1, tree.count):
            self.child_groups.setdefault(int(tree.parent[g]), []).append(g)

    # -- expansion --------------------------------------------------------------------------
    def _invalidate(self, group: int) -> None:
        self._scene = None
        cursor = group
        while cursor >= 0:
            self._cache.pop(cursor, None)
            cursor = int(self.ir.groups.parent[cursor])

    def expand(self, group: int) -> None:
        if group not in self.expanded:
            self.expanded.add(group)
            self._invalidate(group)

    def collapse(self, group: int) -> None:
        if group != ROOT and group in self.expanded:
            self.expanded.discard(group)
            self._invalidate(group)

    def toggle(self, group: int) -> None:
        (self.collapse if group in self.expanded else self.expand)(group)

    def expand_to_depth(self, depth: int) -> None:
        """Expand every group shallower than ``depth`` (0 = only the top level shown)."""
        tree = self.ir.groups
        wanted = {ROOT} | {g for g in range(1, tree.count) if tree.depth[g] < depth + 1}
        wanted = {g for g in wanted if tree.depth[g] <= depth}
        self.expanded = wanted
        self._cache.clear()
        self._scene = None

    def reveal(self, node: int) -> None:
        """Expand every group around ``node`` so the node itself is visible."""
        for level in range(1, self.anc.shape[0]):
            group = int(self.anc[level, node])
            if group >= 0:
                self.expand(group)

    # -- layout -------------------------------------------------------------------------------
    def _node_size(self, node: int, weighted: bool = True) -> tuple[float, float]:
        """Sized for its op type and, as Netron draws them, its weights' shapes on a second
        line (``weighted``: not for a level too dense to be read)."""
        ir = self.ir
        text = ir.op_type(node) if ir.kind[node] == OP else ir.label(node)
        width = max(56.0, CHAR_WIDTH * min(len(text), 28) + 20.0)
        if weighted and ir.kind[node] == OP:
            weights = weights_text(ir, node)
            if weights:
                wide = CHAR_WIDTH * min(len(weights), 36) + 20.0
                return max(width, wide), NODE_HEIGHT + WEIGHTS_LINE
        return width, NODE_HEIGHT

    def _group_size(self, group: int) -> tuple[float, float]:
        name = self.ir.groups.name[group]
        return max(96.0, CHAR_WIDTH * min(len(name), 32) + 56.0), GROUP_HEIGHT

    def level(self, group: int) -> _Level:
        cached = self._cache.get(group)
        if cached is not None:
            return cached
        ir = self.ir
        depth = int(ir.groups.depth[group])
        nodes = np.flatnonzero(ir.groups.node_group == group)
        groups = np.array(self.child_groups.get(group, []), dtype=np.int64)
        # a group holding a single node (``/stem/stem.0/Conv``) shows the node itself
        single = self.group_size[groups] == 1
        solo_nodes = self.group_first[groups[single]]
        solo_groups = groups[single]
        groups = groups[~single]
        keys = np.concatenate([nodes, solo_nodes, self.group_first[groups]]).astype(np.int64)
        order = np.argsort(keys, kind="stable")
        items_node = np.concatenate([nodes, solo_nodes, np.full(len(groups), -1)])[order]
        items_node = items_node.astype(np.int32)
        items_group = np.concatenate([np.full(len(nodes), -1), solo_groups, groups])[order]
        items_group = np.where(items_node >= 0, -1, items_group).astype(np.int32)
        via_group = np.concatenate(
            [np.full(len(nodes), -1), solo_groups, np.full(len(groups), -1)]
        )[order]
        n = len(order)
        width = np.empty(n)
        height = np.empty(n)
        children: dict[int, _Level] = {}
        weighted = n <= WEIGHTS_LEVEL_MAX
        for i in range(n):
            if items_node[i] >= 0:
                width[i], height[i] = self._node_size(int(items_node[i]), weighted)
            elif int(items_group[i]) in self.expanded:
                child = self.level(int(items_group[i]))
                children[i] = child
                width[i] = max(
                    child.layout.width + 2 * GROUP_PAD, self._group_size(int(items_group[i]))[0]
                )
                height[i] = child.layout.height + GROUP_HEADER + 2 * GROUP_PAD
            else:
                width[i], height[i] = self._group_size(int(items_group[i]))
        # edges whose two ends lie inside this group, mapped to this level's items
        src, dst = ir.edge_src, ir.edge_dst
        row = self.anc[depth]
        inside = (row[src] == group) & (row[dst] == group)
        s, d = src[inside], dst[inside]
        item_of_node = np.full(ir.node_count, -1, dtype=np.int64)
        item_of_node[items_node[items_node >= 0]] = np.flatnonzero(items_node >= 0)
        item_of_group = {int(g): i for i, g in enumerate(items_group.tolist()) if g >= 0}
        item_of_group.update({int(g): i for i, g in enumerate(via_group.tolist()) if g >= 0})
        if depth + 1 < self.anc.shape[0]:
            deeper = self.anc[depth + 1]
            group_item = np.full(ir.groups.count, -1, dtype=np.int64)
            for g, i in item_of_group.items():
                group_item[g] = i
            rep_s = np.where(self.node_depth[s] > depth, group_item[deeper[s]], item_of_node[s])
            rep_d = np.where(self.node_depth[d] > depth, group_item[deeper[d]], item_of_node[d])
        else:
            rep_s, rep_d = item_of_node[s], item_of_node[d]
        pairs = _distinct_pairs(rep_s, rep_d, n)
        layout = layered_layout(n, pairs[:, 0], pairs[:, 1], width, height)
        level = _Level(
            items_node, items_group, width, height, layout, (pairs[:, 0], pairs[:, 1]), children
        )
        self._cache[group] = level
        return level

    def scene(self) -> Scene:
        if self._scene is None:
            self._scene = self._compose()
        return self._scene

    def _compose(self) -> Scene:
        kinds: list[int] = []
        refs: list[int] = []
        rects: list[tuple[float, float, float, float]] = []
        depths: list[int] = []
        parents: list[int] = []  # the frame box each box sits in, -1 at the top
        routes: dict[tuple[int, int], np.ndarray] = {}  # laid-out edges between level items
        group_box: dict[int, int] = {}

        def place(level: _Level, ox: float, oy: float, depth: int, parent: int) -> None:
            layout = level.layout
            first_box = len(kinds)
            for i in range(len(level.items_node)):
                x0 = ox + layout.x[i] - level.width[i] / 2
                y0 = oy + layout.y[i] - level.height[i] / 2
                rect = (x0, y0, x0 + level.width[i], y0 + level.height[i])
                if level.items_node[i] >= 0:
                    kinds.append(BOX_NODE)
                    refs.append(int(level.items_node[i]))
                else:
                    group = int(level.items_group[i])
                    kinds.append(BOX_FRAME if i in level.children else BOX_GROUP)
                    refs.append(group)
                    group_box[group] = len(kinds) - 1
                rects.append(rect)
                depths.append(depth)
                parents.append(parent)
            for k, (a, b) in enumerate(zip(*level.edge_items, strict=True)):
                routes[(first_box + int(a), first_box + int(b))] = layout.edge_polyline(
                    k
                ) + np.array([ox, oy])
            for i, child in level.children.items():
                x0, y0 = rects[first_box + i][0], rects[first_box + i][1]
                inner_width = level.width[i] - 2 * GROUP_PAD
                dx = (inner_width - child.layout.width) / 2
                place(
                    child, x0 + GROUP_PAD + dx, y0 + GROUP_HEADER + GROUP_PAD, depth + 1,
                    first_box + i,
                )  # fmt: skip

        root = self.level(ROOT)
        place(root, 0.0, 0.0, 0, -1)
        rect_array = np.array(rects, dtype=float).reshape(-1, 4)
        kind_array = np.array(kinds, dtype=np.int8)
        ref_array = np.array(refs, dtype=np.int32)
        node_box = self._node_boxes(kind_array, ref_array, group_box)
        e_src, e_dst, e_tensor, polylines = self._visible_edges(
            node_box, rect_array, np.array(parents, dtype=np.int64), routes
        )
        counts = np.array([len(p) for p in polylines], dtype=np.int64)
        offsets = np.zeros(len(polylines) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        points = np.concatenate(polylines) if polylines else np.zeros((0, 2))
        edge_rect = np.array(
            [(p[:, 0].min(), p[:, 1].min(), p[:, 0].max(), p[:, 1].max()) for p in polylines],
            dtype=float,
        ).reshape(-1, 4)
        return Scene(
            box_kind=kind_array,
            box_ref=ref_array,
            box_rect=rect_array,
            box_depth=np.array(depths, dtype=np.int32),
            edge_offsets=offsets,
            edge_points=points,
            edge_rect=edge_rect,
            edge_src_box=e_src,
            edge_dst_box=e_dst,
            node_box=node_box,
            width=float(root.layout.width),
            height=float(root.layout.height),
            group_box=group_box,
            edge_tensor=e_tensor,
        )

    def _visible_edges(
        self,
        node_box: np.ndarray,
        rects: np.ndarray,
        parents: np.ndarray,
        routes: dict[tuple[int, int], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
        """One polyline per pair of visible boxes the model connects. An edge whose ends sit in
        different expanded groups leaves its frame at the bottom, follows the route laid out
        where the two meet, and enters the other frame at the top down to its box — so MaxPool →
        Add inside ``layer1.0`` is drawn to the Add, not stopped at the frame."""
        ir = self.ir
        src, dst = node_box[ir.edge_src], node_box[ir.edge_dst]
        keep = (src >= 0) & (dst >= 0) & (src != dst)
        pairs, first = np.unique(
            np.stack([src[keep], dst[keep]], axis=1).reshape(-1, 2), axis=0, return_index=True
        )
        tensors = ir.edge_tensor[keep][first] if len(first) else np.zeros(0, dtype=np.int32)

        children: dict[int, np.ndarray] = {}  # frame box → the boxes directly inside it
        order = np.argsort(parents, kind="stable")
        split = np.searchsorted(parents[order], np.arange(-1, len(rects) + 1))
        for frame in np.unique(parents[parents >= 0]).tolist():
            children[frame] = order[split[frame + 1] : split[frame + 2]]

        def chain(box: int) -> list[int]:
            out = [box]
            while parents[out[-1]] >= 0:
                out.append(int(parents[out[-1]]))
            return out

        def bottom(box: int) -> tuple[float, float]:
            x0, _, x1, y1 = rects[box]
            return (x0 + x1) / 2, y1

        def top(box: int) -> tuple[float, float]:
            x0, y0, x1, _ = rects[box]
            return (x0 + x1) / 2, y0

        def step_to(
            points: list[tuple[float, float]],
            step: tuple[float, float],
            frame: int,
            inner: int,
            entering: bool,
        ) -> None:
            """To ``step``, round ``frame``'s own nodes where the straight way crosses one
            (out of a frame on the way up, into one on the way down)."""
            if crosses(points[-1], step, rects, {inner}, children.get(frame, NONE)):
                detour = around(points[-1], step, rects[frame], GROUP_PAD, RANK_GAP, entering)
                points.extend(detour[1:])
            else:
                points.append(step)

        polylines: list[np.ndarray] = []
        for a, b in pairs.tolist():
            route = routes.get((a, b))
            if route is not None:  # the two sit side by side in one level
                polylines.append(route)
                continue
            up, down = chain(a), chain(b)
            common = set(down)
            k = next((i for i, box in enumerate(up) if box in common), len(up))
            meet = up[k] if k < len(up) else -1
            m = down.index(meet) if meet >= 0 else len(down)
            exits, entries = up[:k], down[:m]  # a … the item below the meeting level

            points: list[tuple[float, float]] = [bottom(exits[0])]
            for inner, frame in itertools.pairwise(exits):
                step_to(points, bottom(frame), frame, inner, entering=False)
            via = routes.get((exits[-1], entries[-1]))
            if via is not None:
                points.extend(map(tuple, via.tolist()))
            inward = list(reversed(entries))
            points.append(top(inward[0]))
            for frame, inner in itertools.pairwise(inward):
                step_to(points, top(inner), frame, inner, entering=True)
            polylines.append(np.array(points, dtype=float))
        spread_entries(polylines, pairs[:, 1], tensors, rects, RANK_GAP / 2)
        return (
            pairs[:, 0].astype(np.int32),
            pairs[:, 1].astype(np.int32),
            tensors.astype(np.int32),
            polylines,
        )

    def _node_boxes(
        self, kinds: np.ndarray, refs: np.ndarray, group_box: dict[int, int]
    ) -> np.ndarray:
        node_box = np.full(self.ir.node_count, -1, dtype=np.int32)
        direct = np.flatnonzero(kinds == BOX_NODE)
        node_box[refs[direct]] = direct
        unassigned = node_box < 0
        for level in range(1, self.anc.shape[0]):
            groups = self.anc[level]
            for group in np.unique(groups[unassigned & (groups >= 0)]):
                if int(group) not in self.expanded and int(group) in group_box:
                    hit = unassigned & (groups == group)
                    node_box[hit] = group_box[int(group)]
                    unassigned &= ~hit
        return node_box

    def visible_group_of(self, node: int) -> int:
        """The collapsed group that hides ``node``, or -1 when the node is itself visible."""
        box = int(self.scene().node_box[node])
        if box >= 0 and self.scene().box_kind[box] == BOX_GROUP:
            return int(self.scene().box_ref[box])
        return -1


def _distinct_pairs(src: np.ndarray, dst: np.ndarray, items: int) -> np.ndarray:
    """The distinct (src, dst) item pairs, src ≠ dst, in (src, dst) order: [P, 2]. Edges
    within one item go first and each pair is one integer (a 100k-node model's 190k edges as
    rows through ``np.unique(axis=0)`` took 0.07 s of its first view)."""
    keep = src != dst
    width = np.int64(items + 1)  # -1 (no item) stays distinct from item 0
    keys = np.unique((src[keep].astype(np.int64) + 1) * width + (dst[keep] + 1))
    return np.stack([keys // width - 1, keys % width - 1], axis=1)
