"""Which PyTorch output each ONNX output is compared with, and detections compared as sets.

ONNX outputs are paired with PyTorch's flattened leaves (``core/pytorch/outputs.py``) by name
where every leaf's key path names an ONNX output, else by position. A count that differs is said
output by output — never one exception for the whole model.

A detector's boxes, scores and labels (torchvision's ``list[dict]``) are a set: rows whose scores
tie come out in an order nothing defines, so a right export may list the same detections in
another order (a random-weight Faster R-CNN gives 78 of 100 boxes one score). Such groups are
compared as matched rows — each ONNX row paired with the PyTorch row of its label nearest in box
and score — and a different number of detections is said as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from deploylens.core.validate.compare import Comparator, judge_scale
from deploylens.core.validate.records import OutputComparison
from deploylens.core.validate.tolerances import Tolerances

Leaf = tuple[str, np.ndarray]
DETECTION_FIELDS = ("boxes", "scores", "labels", "masks", "keypoints", "keypoints_scores")
MATCH_LIMIT = 4096  # rows: above this, detections are compared in the order given


@dataclass
class Pairing:
    """ONNX output index → PyTorch leaf index (None: PyTorch gave nothing for it)."""

    torch_index: list[int | None]
    torch_names: list[str]  # each ONNX output's PyTorch key path ("" where unpaired)
    how: str  # "by name" | "by position"
    extra: list[str] = field(default_factory=list)  # PyTorch leaves no ONNX output took
    groups: dict[str, list[int]] = field(default_factory=dict)  # detection prefix → ONNX outputs


def pair_outputs(onnx_names: list[str], leaves: list[Leaf]) -> Pairing:
    """Pair by name when every PyTorch key path (or its last key) names an ONNX output, else
    by position."""
    paths = [path for path, _ in leaves]
    index = {name: i for i, name in enumerate(onnx_names)}
    named = _by_name(paths, index)
    if named is not None:
        torch_index: list[int | None] = [None] * len(onnx_names)
        for leaf, out in enumerate(named):
            torch_index[out] = leaf
        how = "by name"
    else:
        torch_index = [i if i < len(paths) else None for i in range(len(onnx_names))]
        how = "by position"
    taken = {i for i in torch_index if i is not None}
    pairing = Pairing(
        torch_index,
        [paths[i] if i is not None else "" for i in torch_index],
        how,
        [paths[i] or f"#{i}" for i in range(len(paths)) if i not in taken],
    )
    pairing.groups = detection_groups(pairing.torch_names)
    return pairing


def _by_name(paths: list[str], index: dict[str, int]) -> list[int] | None:
    for candidates in (paths, [p[2:] if p.startswith("0.") else p for p in paths]):
        if (
            candidates
            and all(p in index for p in candidates)
            and len(set(candidates)) == len(candidates)
        ):
            return [index[p] for p in candidates]
    return None


def detection_groups(names: list[str]) -> dict[str, list[int]]:
    """Outputs that together are one detector's result: siblings under one key path holding at
    least ``boxes`` and ``scores``."""
    by_parent: dict[str, dict[str, int]] = {}
    for i, name in enumerate(names):
        parent, _, last = name.rpartition(".")
        if last in DETECTION_FIELDS:
            by_parent.setdefault(parent, {})[last] = i
    return {
        parent: list(members.values())
        for parent, members in by_parent.items()
        if "boxes" in members and "scores" in members
    }


def match_rows(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> np.ndarray | None:
    """For each ONNX detection, the index of its PyTorch counterpart (same label, nearest box
    and score, each used once); None when the counts differ or the rows are not a table."""
    boxes_g, boxes_w = got["boxes"], want["boxes"]
    if boxes_g.ndim != 2 or boxes_g.shape != boxes_w.shape or len(boxes_g) > MATCH_LIMIT:
        return None
    n = len(boxes_g)
    cost = np.abs(boxes_g[:, None, :].astype(np.float64) - boxes_w[None, :, :]).max(axis=2)
    cost += np.abs(got["scores"].reshape(n, 1) - want["scores"].reshape(1, n))
    if "labels" in got and "labels" in want:
        cost[got["labels"].reshape(n, 1) != want["labels"].reshape(1, n)] = np.inf
    order = np.full(n, -1, np.int64)
    used_g, used_w = np.zeros(n, bool), np.zeros(n, bool)
    for flat in np.argsort(cost, axis=None, kind="stable"):
        i, j = divmod(int(flat), n)
        if used_g[i] or used_w[j] or not np.isfinite(cost[i, j]):
            continue
        order[i], used_g[i], used_w[j] = j, True, True
    if (order < 0).any():  # a label only one side has: leave the rows unmatched
        rest = np.flatnonzero(~used_w)
        order[order < 0] = rest[: int((order < 0).sum())]
    return order


class OutputsComparator:
    """Every ONNX output against its PyTorch (or reference) counterpart over batches: pairing,
    detection sets, then the per-output statistics of ``Comparator``."""

    def __init__(self, onnx_names: list[str], tolerances: Tolerances) -> None:
        self.names = onnx_names
        self.tolerances = tolerances
        self.comparators = [Comparator(name, tolerances) for name in onnx_names]
        self.pairing: Pairing | None = None
        self.notes: list[str] = []
        self.missing: dict[int, str] = {}  # ONNX output → why it had nothing to compare with
        self.reordered = 0

    def add(self, got: list[np.ndarray], want: list[Leaf]) -> None:
        pairing = self.pairing = self.pairing or pair_outputs(self.names, want)
        grouped: dict[int, np.ndarray] = {}
        for parent, members in pairing.groups.items():
            grouped.update(self._group(parent, members, got, want))
        for i, comparator in enumerate(self.comparators):
            leaf = pairing.torch_index[i]
            if leaf is None:
                self.missing[i] = f"PyTorch gave {len(want)} outputs; none pairs with this one"
                continue
            g, w = np.asarray(got[i]), grouped.get(i, np.asarray(want[leaf][1]))
            comparator.add(g, w)

    def _group(
        self, parent: str, members: list[int], got: list[np.ndarray], want: list[Leaf]
    ) -> dict[int, np.ndarray]:
        """PyTorch's rows of one detection group reordered to match ONNX's, or a count that
        differs said as such."""
        assert self.pairing is not None
        fields = {self.pairing.torch_names[i].rpartition(".")[2]: i for i in members}
        g = {k: np.asarray(got[i]) for k, i in fields.items()}
        w = {k: np.asarray(want[self.pairing.torch_index[i] or 0][1]) for k, i in fields.items()}
        where = f"detections{f' of {parent}' if parent else ''}"
        count_g, count_w = len(g["boxes"]), len(w["boxes"])
        if count_g != count_w:
            note = (
                f"{where}: ONNX Runtime returned {count_g} where PyTorch returned {count_w} "
                "(the exported graph keeps a different number of boxes)"
            )
            if note not in self.notes:
                self.notes.append(note)
            return {}
        order = match_rows(g, w)
        if order is None:
            return {}
        moved = int((order != np.arange(len(order))).sum())
        self.reordered += moved
        if moved and not any(n.startswith(where + ": compared as a set") for n in self.notes):
            self.notes.append(
                f"{where}: compared as a set of {count_g} rows matched by label, box and score "
                f"({moved} listed in another order, as tied scores allow)"
            )
        return {i: w[k][order] for k, i in fields.items()}

    def results(self, note: str = "") -> list[OutputComparison]:
        """Each output's comparison, judged at its scale (``judge_scale``); an output PyTorch
        gave nothing for, or a detection count that differs, fails with the sentence."""
        results = []
        counts = [n for n in self.notes if "returned" in n]
        for i, comparator in enumerate(self.comparators):
            result = comparator.result()
            if i in self.missing:
                result.passed, result.reason = False, self.missing[i]
            elif counts and self._in_group(i) and result.reason.startswith("shape"):
                result.reason = counts[0]
            judge_scale(result, self.tolerances, note)
            results.append(result)
        return results

    def _in_group(self, i: int) -> bool:
        return self.pairing is not None and any(i in m for m in self.pairing.groups.values())

    def structure_problems(self) -> list[str]:
        """What does not line up between the two output lists (said beside the table)."""
        if self.pairing is None:
            return []
        problems = []
        if self.pairing.extra:
            problems.append(
                f"PyTorch gave {len(self.pairing.extra)} output(s) no ONNX output pairs with: "
                + ", ".join(self.pairing.extra[:6])
            )
        return problems
