"""Layered (Sugiyama-style) layout in NumPy: deterministic, no Qt.

1. Back edges: an edge that goes backwards in the given order (ONNX files are topologically
   sorted, so that only happens once groups are contracted) is reversed and declared.
2. Ranks by longest path, then sources pulled down next to their first consumer.
3. Long edges get dummy nodes (capped; the rest are drawn straight).
4. Crossing reduction: alternating down/up barycenter sweeps. Up to ``BY_RANK_MAX`` items
   a sweep goes rank by rank, each rank ordered by its neighbours' new order (the textbook
   sweep: a transformer block's 4 crossings became 1, dot's count), and the order with the
   fewest crossings is kept; above that, all ranks move at once, vectorized.
5. Coordinates: neighbours' mean x, then overlaps removed per layer with one segmented
   cumulative max; a few rounds.
6. Edges are polylines through their dummies: straight down through each rank's band in the
   dummy's own column (a slant across the band went through the boxes beside it), slanting
   only in the gaps between ranks, where no box is.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

NODE_GAP = 24.0
RANK_GAP = 36.0
DUMMY_WIDTH = 8.0
MAX_DUMMY_FACTOR = 4  # dummies at most this many times the item count
SWEEPS = 8
BY_RANK_MAX = 6000  # items (dummies too) up to which sweeps go rank by rank
COORDINATE_ROUNDS = 6


@dataclass
class LayeredLayout:
    x: np.ndarray  # float [n] centre
    y: np.ndarray  # float [n] centre
    rank: np.ndarray  # int [n]
    order: np.ndarray  # int [n] position within its rank
    back_edge: np.ndarray  # bool [E]
    edge_offsets: np.ndarray  # int [E+1] into edge_points
    edge_points: np.ndarray  # float [K, 2] polyline vertices, source → target
    width: float
    height: float

    def edge_polyline(self, edge: int) -> np.ndarray:
        return self.edge_points[self.edge_offsets[edge] : self.edge_offsets[edge + 1]]


def _longest_path_ranks(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Ranks of a DAG whose edges all go from lower to higher index."""
    rank = np.zeros(n, dtype=np.int64)
    if not len(src):
        return rank
    order = np.argsort(dst, kind="stable")
    s_sorted, d_sorted = src[order].tolist(), dst[order].tolist()
    rank_list = [0] * n
    # edges sorted by target; every source index < target index, so one pass suffices
    for s, d in zip(s_sorted, d_sorted, strict=True):
        candidate = rank_list[s] + 1
        if candidate > rank_list[d]:
            rank_list[d] = candidate
    rank[:] = rank_list
    # sources with consumers move down next to their earliest consumer (constants, weights)
    indegree = np.bincount(dst, minlength=n)
    first_use = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first_use, src, rank[dst])
    movable = (indegree == 0) & (first_use < np.iinfo(np.int64).max)
    rank[movable] = first_use[movable] - 1
    return rank


def _add_dummies(
    n: int, src: np.ndarray, dst: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]]]:
    """Split edges spanning several ranks into unit edges through dummy nodes."""
    span = rank[dst] - rank[src]
    budget = MAX_DUMMY_FACTOR * max(n, 1)
    long_edges = np.flatnonzero(span > 1)
    # shortest long edges first get dummies; the longest ones may be drawn straight
    long_edges = long_edges[np.argsort(span[long_edges], kind="stable")]
    needed = np.cumsum(span[long_edges] - 1)
    routed = set(long_edges[needed <= budget].tolist())
    all_rank = [rank.tolist()]
    new_src: list[int] = []
    new_dst: list[int] = []
    chains: list[list[int]] = []
    next_id = n
    extra_ranks: list[int] = []
    for e, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        if e in routed:
            chain = []
            previous = s
            for r in range(int(rank[s]) + 1, int(rank[d])):
                chain.append(next_id)
                extra_ranks.append(r)
                new_src.append(previous)
                new_dst.append(next_id)
                previous = next_id
                next_id += 1
            new_src.append(previous)
            new_dst.append(d)
            chains.append(chain)
        else:
            new_src.append(s)
            new_dst.append(d)
            chains.append([])
    full_rank = np.concatenate([all_rank[0], np.array(extra_ranks, dtype=np.int64)])
    return (
        np.array(new_src, dtype=np.int64),
        np.array(new_dst, dtype=np.int64),
        full_rank.astype(np.int64),
        chains,
    )


def _positions(rank: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Index of every node within its rank when each rank is sorted by ``key``."""
    order = np.lexsort((key, rank))
    sorted_rank = rank[order]
    starts = np.searchsorted(sorted_rank, sorted_rank, side="left")
    position = np.empty(len(rank), dtype=np.int64)
    position[order] = np.arange(len(rank)) - starts
    return position


def _sweep(
    pos: np.ndarray, rank: np.ndarray, src: np.ndarray, dst: np.ndarray, downward: bool
) -> np.ndarray:
    n = len(pos)
    ends, others = (dst, src) if downward else (src, dst)
    # only unit edges between adjacent ranks pull (long straight edges are ignored)
    adjacent = np.abs(rank[dst] - rank[src]) == 1
    ends, others = ends[adjacent], others[adjacent]
    total = np.bincount(ends, weights=pos[others].astype(float), minlength=n)
    count = np.bincount(ends, minlength=n)
    bary = np.where(count > 0, total / np.maximum(count, 1), pos.astype(float))
    return _positions(rank, bary + pos * 1e-9)  # ties keep the previous order


def _order_rank_by_rank(
    pos: np.ndarray, rank: np.ndarray, src: np.ndarray, dst: np.ndarray, sweeps: int
) -> np.ndarray:
    """Alternating sweeps, one rank at a time from the new order of the rank before it; the
    order with the fewest crossings between adjacent ranks wins. Plain Python lists: ranks
    hold a few items each, where a NumPy call per rank costs more than the work."""
    adjacent = np.abs(rank[dst] - rank[src]) == 1
    top = np.where(rank[src] < rank[dst], src, dst)[adjacent].tolist()
    bottom = np.where(rank[src] < rank[dst], dst, src)[adjacent].tolist()
    ranks = int(rank.max()) + 1 if len(rank) else 0
    rank_list = rank.tolist()
    members: list[list[int]] = [[] for _ in range(ranks)]
    for item, r in enumerate(rank_list):
        members[r].append(item)
    above: list[list[int]] = [[] for _ in range(len(rank))]
    below: list[list[int]] = [[] for _ in range(len(rank))]
    down_edges: list[list[tuple[int, int]]] = [[] for _ in range(ranks)]  # by the upper rank
    for a, b in zip(top, bottom, strict=True):
        above[b].append(a)
        below[a].append(b)
        down_edges[rank_list[a]].append((a, b))
    order: list[int] = pos.astype(np.int64).tolist()

    def crossings() -> int:
        count = 0
        for edges in down_edges:
            seen: list[int] = []  # lower ends so far, sorted, walking the upper rank in order
            for _, b in sorted(edges, key=lambda e: (order[e[0]], order[e[1]])):
                at = order[b]
                count += len(seen) - bisect.bisect_right(seen, at)
                bisect.insort(seen, at)
        return count

    best, fewest = list(order), crossings()
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        pulls = above if downward else below
        for r in range(1, ranks) if downward else range(ranks - 2, -1, -1):
            keyed = []
            for item in members[r]:
                near = pulls[item]
                mean = sum(order[u] for u in near) / len(near) if near else float(order[item])
                keyed.append((mean, order[item], item))
            keyed.sort()
            for place, (_, _, item) in enumerate(keyed):
                order[item] = place
        now = crossings()
        if now < fewest:
            best, fewest = list(order), now
    return np.array(best, dtype=np.int64)


def _separate(x: np.ndarray, width: np.ndarray, rank: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Shift nodes right just enough to keep ``NODE_GAP`` between neighbours in each rank."""
    seq = np.lexsort((order, rank))
    w = width[seq]
    r = rank[seq]
    half = w / 2
    # minimal distance from the rank's first node: cumulative (prev half + gap + own half)
    step = np.concatenate([[0.0], half[:-1] + NODE_GAP + half[1:]])
    new_rank = np.concatenate([[True], r[1:] != r[:-1]])
    step[new_rank] = 0.0
    cum = np.cumsum(step)
    base = cum - np.maximum.accumulate(np.where(new_rank, cum, -np.inf))
    # x_i >= x_j + (base_i - base_j) for j < i in the same rank  <=>  x_i - base_i is nondecreasing
    shifted = x[seq] - base
    big = 1e12
    lifted = shifted + r * big
    lifted = np.maximum.accumulate(lifted)
    out = np.empty_like(x)
    out[seq] = lifted - r * big + base
    # keep each rank's mean where it wanted to be (separation only spreads, never drifts)
    drift = np.bincount(rank, weights=out - x) / np.maximum(np.bincount(rank), 1)
    result: np.ndarray = out - drift[rank]
    return result


def layered_layout(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
) -> LayeredLayout:
    """Lay out ``n`` items (index order = a topological order hint) with edges ``src → dst``."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    edge_index = np.flatnonzero(keep)
    s, d = src[keep], dst[keep]
    back = s > d
    s_fwd = np.where(back, d, s)
    d_fwd = np.where(back, s, d)
    rank_items = _longest_path_ranks(n, s_fwd, d_fwd)
    all_src, all_dst, rank, chains = _add_dummies(n, s_fwd, d_fwd, rank_items)
    total = len(rank)
    w = np.concatenate([np.asarray(width, float), np.full(total - n, DUMMY_WIDTH)])
    h = np.concatenate([np.asarray(height, float), np.zeros(total - n)])
    # initial order: item index (file order), dummies after their source
    initial = np.concatenate([np.arange(n, dtype=float), np.zeros(total - n)])
    for chain, source in zip(chains, s_fwd.tolist(), strict=True):
        for dummy in chain:
            initial[dummy] = source + 0.5
    pos = _positions(rank, initial)
    if total <= BY_RANK_MAX:
        pos = _order_rank_by_rank(pos, rank, all_src, all_dst, SWEEPS)
    else:
        for sweep in range(SWEEPS):
            pos = _sweep(pos, rank, all_src, all_dst, downward=sweep % 2 == 0)
    # x: packed, then pulled towards neighbours and separated again
    x = _separate(np.zeros(total), w, rank, pos)
    for _ in range(COORDINATE_ROUNDS):
        total_x = np.bincount(all_dst, weights=x[all_src], minlength=total) + np.bincount(
            all_src, weights=x[all_dst], minlength=total
        )
        count = np.bincount(all_dst, minlength=total) + np.bincount(all_src, minlength=total)
        wanted = np.where(count > 0, total_x / np.maximum(count, 1), x)
        x = _separate(0.5 * x + 0.5 * wanted, w, rank, pos)
    ranks = int(rank.max()) + 1 if total else 0
    rank_height = np.zeros(max(ranks, 1))
    np.maximum.at(rank_height, rank, h)
    top = np.concatenate([[0.0], np.cumsum(rank_height + RANK_GAP)[:-1]])
    y = top[rank] + rank_height[rank] / 2
    left = float((x - w / 2).min()) if total else 0.0
    x = x - left
    width_total = float((x + w / 2).max()) if total else 0.0
    height_total = float(top[-1] + rank_height[-1]) if total else 0.0
    # polylines in original edge order (self loops get an empty polyline)
    offsets = np.zeros(len(src) + 1, dtype=np.int64)
    points: list[tuple[float, float]] = []
    counts = np.zeros(len(src), dtype=np.int64)
    for k, e in enumerate(edge_index.tolist()):
        a, b = int(s_fwd[k]), int(d_fwd[k])
        path = [(x[a], y[a] + h[a] / 2)]
        for c in chains[k]:  # through a rank's band straight down its dummy's free column
            half = rank_height[rank[c]] / 2
            path.extend([(x[c], y[c] - half), (x[c], y[c] + half)] if half else [(x[c], y[c])])
        path.append((x[b], y[b] - h[b] / 2))
        if back[k]:
            path.reverse()
        points.extend(path)
        counts[e] = len(path)
    np.cumsum(counts, out=offsets[1:])
    back_full = np.zeros(len(src), dtype=bool)
    back_full[edge_index] = back
    return LayeredLayout(
        x=x[:n],
        y=y[:n],
        rank=rank[:n],
        order=pos[:n],
        back_edge=back_full,
        edge_offsets=offsets,
        edge_points=np.array(points, dtype=float).reshape(-1, 2),
        width=width_total,
        height=height_total,
    )
