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
