"""Module hierarchy of a graph: from the dynamo exporter's name scopes, from TorchScript-style
``/a/b/Op`` node names, or flat; oversized levels are split into chunks so that no level asks the
layout for more than ``MAX_CHILDREN`` items (Model Explorer's default cap is 1,000)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

import numpy as np

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
# Bounds on what the metadata may make of a node's path (a real one is a few hundred bytes).
MAX_SCOPES_TEXT = 1 << 16
MAX_SCOPE_DEPTH = 256
MAX_SCOPE_NAME = 512
MAX_CHILDREN = 1000
ROOT = 0
_AFTER_FIRST = itemgetter(slice(1, None))


def parse_name_scopes(value: str) -> tuple[str, ...]:
    """``"['', 'layer1', 'layer1.0', 'conv2d']"`` → ``('layer1', 'layer1.0')``.

    The first entry is the root module (empty) and the last the op's own name; both are dropped.
    """
    if not isinstance(value, str):
        return ()
    if value.startswith("['") and value.endswith("']") and not ('"' in value or "\\" in value):
        parts = value[2:-2].split("', '")
    elif len(value) > MAX_SCOPES_TEXT or not value.startswith("["):
        return ()  # not the exporter's list: an int, None, a 10k-deep nesting — no scope
    else:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return ()
        if not isinstance(parsed, list | tuple):
            return ()
        parts = [p if isinstance(p, str) else str(p) for p in parsed]
    return tuple(p[:MAX_SCOPE_NAME] for p in parts[1:-1][:MAX_SCOPE_DEPTH] if p)


def path_from_node_name(name: str) -> tuple[str, ...]:
    """``/layer1/layer1.0/conv1/Conv`` → ``('layer1', 'layer1.0', 'conv1')``."""
    if not name.startswith("/"):
        return ()
    parts = name.split("/")[1:-1][:MAX_SCOPE_DEPTH]
    if "" in parts or max(map(len, parts), default=0) > MAX_SCOPE_NAME:
        return tuple(p[:MAX_SCOPE_NAME] for p in parts if p)
    return tuple(parts)


@dataclass
class GroupTree:
    """Groups as arrays: group 0 is the root; ``node_group[n]`` is a node's innermost group."""

    parent: np.ndarray  # int32 [G], -1 for the root
    name: list[str]  # last path component (or "#a–b" for a chunk)
    path: list[str]  # full path, "/"-joined
    depth: np.ndarray  # int32 [G]
    synthetic: np.ndarray  # bool [G]: chunk groups made to cap a level's size
    node_group: np.ndarray  # int32 [N]

    @property
    def count(self) -> int:
        return len(self.name)

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if self.count else 0

    def ancestors_by_depth(self) -> np.ndarray:
        """``[D+1, N]``: the group containing each node at every depth, -1 below its own."""
        depth = self.max_depth
        table = np.full((depth + 1, len(self.node_group)), -1, dtype=np.int32)
        current = self.node_group.copy()
        for level in range(depth, -1, -1):
            here = self.depth[current] == level
            table[level, here] = current[here]
            move = here & (self.parent[current] >= 0)
            current[move] = self.parent[current[move]]
        return table


SEP = "\x1f"  # joins a path's parts into one key: a module's name may hold "/", not this


def path_key(path: Sequence[str]) -> str:
    """The key of a module path: each part led by ``SEP`` (``()`` → ``""``, the root)."""
    return "".join(SEP + part.replace(SEP, " ") for part in path)


def name_prefix_key(prefix: str) -> str:
    """The key (led by "/") of a node name's prefix (``/a/b`` of ``/a/b/Conv``) as
    ``path_from_node_name`` reads it, ``""`` when it names no module: a clean prefix is its
    own key, so a 100k-node model's 54k prefixes make no tuple each."""
    if not prefix.startswith("/"):
        return ""
    clean = len(prefix) <= MAX_SCOPE_NAME and prefix.count("/") <= MAX_SCOPE_DEPTH
    if clean and "//" not in prefix and not prefix.endswith("/"):
        return prefix
    return "".join("/" + part for part in path_from_node_name(prefix + "/"))


def tree_from_keys(
    keys: Sequence[str], node_key: Sequence[int], sep: str, max_children: int = MAX_CHILDREN
) -> GroupTree:
    """Groups of nodes by path key (each part led by ``sep``; ``""`` is the root), each node
    given by its index into ``keys``. Groups get ids in order of first use; a group's parent
    is its key up to the last ``sep``."""
    parent = [-1]
    names = [""]
    index: dict[str, int] = {"": ROOT}
    used = dict.fromkeys(map(keys.__getitem__, dict.fromkeys(node_key)))
    for key, (up, _, name) in zip(used, [key.rpartition(sep) for key in used], strict=True):
        if key in index:
            continue
        if up in index:  # the usual case: the parent is known (a module's sibling came first)
            index[key] = len(names)
            parent.append(index[up])
            names.append(name)
            continue
        missing = []
        while key not in index:  # up to the nearest known ancestor
            up, _, name = key.rpartition(sep)
            missing.append((key, up, name))
            key = up
        for prefix, up, name in reversed(missing):
            index[prefix] = len(names)
            parent.append(index[up])
            names.append(name)
    # a group's id is its key's place in ``index``: path and depth in one pass each at C speed
    full = list(map(_AFTER_FIRST, index))
    if sep != "/":
        full = [key.replace(sep, "/") for key in full]
    depth = list(map(str.count, index, repeat(sep)))
    group_of = np.array(list(map(index.get, keys, repeat(ROOT))) or [ROOT], np.int32)
    node_group = group_of[np.fromiter(node_key, np.int64, len(node_key))]
    tree = GroupTree(
        np.array(parent, dtype=np.int32),
        names,
        full,
        np.array(depth, dtype=np.int32),
        np.zeros(len(names), dtype=bool),
        node_group,
    )
    return _cap_levels(tree, max_children)


def _cap_levels(tree: GroupTree, max_children: int) -> GroupTree:
    """Split any group with more than ``max_children`` items into chunk groups, in node order."""
    changed = True
    while changed:
        changed = False
        counts = np.bincount(tree.node_group, minlength=tree.count)
        child_groups = np.bincount(tree.parent[1:], minlength=tree.count)
        for group in np.flatnonzero(counts + child_groups > max_children):
            _chunk(tree, int(group), max_children)
            changed = True
            break  # arrays changed: recount
    return tree


def _chunk(tree: GroupTree, group: int, max_children: int) -> None:
    members = np.flatnonzero(tree.node_group == group)
    subgroups = np.flatnonzero(tree.parent == group)
    # items in topological (file) order: nodes by index, subgroups by their first node
    first = np.full(tree.count, np.iinfo(np.int32).max, dtype=np.int64)
    np.minimum.at(first, tree.node_group, np.arange(len(tree.node_group)))
    for level in range(int(tree.depth.max(initial=0)), 0, -1):  # up the tree, a level at once
        at = np.flatnonzero(tree.depth == level)
        np.minimum.at(first, tree.parent[at], first[at])
    keys = np.concatenate([members, first[subgroups]])
    is_group = np.concatenate([np.zeros(len(members), bool), np.ones(len(subgroups), bool)])
    ids = np.concatenate([members, subgroups])
    order = np.argsort(keys, kind="stable")
    parent, names, paths = list(tree.parent), tree.name, tree.path
    depth, synthetic = list(tree.depth), list(tree.synthetic)
    size = max_children
    chunks = (len(order) + size - 1) // size
    while chunks > max_children:  # very wide levels: bigger chunks, re-capped recursively
        size *= max_children
        chunks = (len(order) + size - 1) // size
    for start in range(0, len(order), size):
        chunk_id = len(names)
        picked = order[start : start + size]
        parent.append(group)
        names.append(f"#{start}–{start + len(picked) - 1}")
        paths.append(f"{tree.path[group]}/{names[-1]}".lstrip("/"))
        depth.append(tree.depth[group] + 1)
        synthetic.append(True)
        tree.node_group[ids[picked[~is_group[picked]]]] = chunk_id
        for sub in ids[picked[is_group[picked]]]:
            parent[sub] = chunk_id
    tree.parent = np.array(parent, dtype=np.int32)
    tree.depth = np.array(depth, dtype=np.int32)
    tree.synthetic = np.array(synthetic, dtype=bool)
    _refresh_depths(tree)


def _refresh_depths(tree: GroupTree) -> None:
    """Moving subgroups under a chunk deepens them and everything below."""
    depth = np.zeros(tree.count, dtype=np.int32)
    cursor = np.arange(tree.count)
    climbing = tree.parent[cursor] >= 0
    while climbing.any():  # every group one step up at once: as many steps as the tree is deep
        depth[climbing] += 1
        cursor[climbing] = tree.parent[cursor[climbing]]
        climbing = tree.parent[cursor] >= 0
    tree.depth = depth
