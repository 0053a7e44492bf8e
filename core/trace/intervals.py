"""Interval arithmetic on event columns: the union of busy intervals, which the statistics and
the diagnosis both measure with (it lived in stats, which the diagnosis imported while stats
imported the diagnosis)."""

from __future__ import annotations

import numpy as np


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint ``(starts, ends)``."""
    if start.size == 0:
        return start, end
    if np.all(start[1:] >= start[:-1]):  # a lane slice usually is sorted already
        s, e = start, np.maximum.accumulate(end)
    else:
        order = np.argsort(start, kind="stable")
        s, e = start[order], end[order]
        del order
        np.maximum.accumulate(e, out=e)
    new = np.empty(s.size, bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    return s[new], np.maximum.reduceat(e, np.flatnonzero(new))
