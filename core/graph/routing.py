"""Edges that enter or leave an expanded group: routed down the frame's inner margin when the
straight line would cross the group's own nodes. A ResNet block's skip edge went from the
frame's top straight to the Add at its bottom — collinear with the Conv → Relu → Conv chain,
so it could not be seen (Netron curves it around the chain)."""

from __future__ import annotations

import numpy as np

MARGIN_SHARE = 0.5  # the lane sits in the middle of the frame's padding
CLEAR = 2.0  # px: a segment grazing a box's border does not count as crossing it


def crosses(
    a: tuple[float, float],
    b: tuple[float, float],
    rects: np.ndarray,
    skip: set[int],
    candidates: np.ndarray,
) -> bool:
    """Does segment a→b pass through the inside of any ``candidates`` box not in ``skip``?"""
    if not len(candidates):
        return False
    boxes = rects[candidates] + np.array([CLEAR, CLEAR, -CLEAR, -CLEAR])
    (x0, y0), (x1, y1) = a, b
    dx, dy = x1 - x0, y1 - y0
    lo, hi = np.zeros(len(boxes)), np.ones(len(boxes))
    for p, q in ((-dx, x0 - boxes[:, 0]), (dx, boxes[:, 2] - x0),
                 (-dy, y0 - boxes[:, 1]), (dy, boxes[:, 3] - y0)):  # fmt: skip
        if p == 0:
            outside = q < 0
            lo[outside], hi[outside] = 1.0, 0.0
        elif p < 0:
            lo = np.maximum(lo, q / p)
        else:
            hi = np.minimum(hi, q / p)
    hit = candidates[(lo < hi) & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])]
    return any(int(h) not in skip for h in hit)


def around(
    a: tuple[float, float],
    b: tuple[float, float],
    frame: np.ndarray,
    pad: float,
    rank_gap: float,
    entering: bool,
) -> list[tuple[float, float]]:
    """a→b inside ``frame`` via the frame's inner margin on b's side (entering: a is the
    frame's top, b a box inside; leaving: a a box inside, b the frame's bottom)."""
    x0, _, x1, _ = frame
    inside = b if entering else a
    lane = x0 + MARGIN_SHARE * pad if inside[0] - x0 <= x1 - inside[0] else x1 - MARGIN_SHARE * pad
    if entering:
        turn = b[1] - rank_gap / 3  # just above the box it enters
        return [a, (lane, a[1] + pad / 2), (lane, turn), (b[0], turn), b]
    turn = a[1] + rank_gap / 3  # just below the box it leaves
    return [a, (a[0], turn), (lane, turn), (lane, b[1] - pad / 2), b]


def spread_entries(
    polylines: list[np.ndarray], dst: np.ndarray, tensors: np.ndarray, rects: np.ndarray,
    turn: float,
) -> None:  # fmt: skip
    """Edges of different tensors entering one box get their own ports along its top, in the
    order they arrive from left to right: a ResNet block's skip edge and its main chain both
    ended on the Add's top centre, the last 12 px drawn on top of each other (edges of one
    tensor may share a trunk). A route's short vertical approach (within ``turn`` above the
    box) moves with its port, so it still enters straight down."""
    order = np.argsort(dst, kind="stable")
    starts = np.flatnonzero(np.r_[True, dst[order][1:] != dst[order][:-1]])
    for group in np.split(order, starts[1:]):
        if len(group) < 2 or len(set(tensors[group].tolist())) < 2:
            continue
        x0, _, x1, _ = rects[int(dst[group[0]])]
        arriving = sorted(group.tolist(), key=lambda e: (polylines[e][-2][0], e))
        for k, edge in enumerate(arriving):
            points = polylines[edge] = polylines[edge].copy()  # a laid-out route is shared
            port = x0 + (x1 - x0) * (k + 1) / (len(arriving) + 1)
            old = points[-1][0]
            before = points[-2]
            if len(points) > 2 and before[0] == old and 0 < points[-1][1] - before[1] <= turn:
                before[0] = port
            points[-1][0] = port
