"""Compare one output of two runtimes: the statistics a deployment engineer reads first."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from deploylens.core.validate.records import OutputComparison
from deploylens.core.validate.tolerances import Tolerances

EPS = 1e-12
inf = float("inf")
BLOCK = 1 << 20  # elements per step: temporaries stay a few MB whatever the tensor size
BINS = [0.0] + [10.0**k for k in range(-12, 3)]


@dataclass
class _Sums:
    """Running reductions over blocks (float64 accumulators)."""

    count: int = 0
    finite: int = 0
    within: int = 0
    nan_error: int = 0  # elements whose error is NaN: exactly one side NaN (or inf − inf)
    nan_mismatch: int = 0
    inf: int = 0
    no_number: int = 0  # NaN or inf on both sides
    max_abs: float = -1.0
    sum_abs: float = 0.0
    max_rel: float = -1.0
    all_max_abs: float = 0.0  # including infinities, for the max/mean statistics
    all_sum_abs: float = 0.0
    all_max_rel: float = 0.0
    all_sum_rel: float = 0.0
    dot: float = 0.0
    norm_a: float = 0.0
    norm_b: float = 0.0
    norm_diff: float = 0.0
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(len(BINS) - 1, np.int64))
    buffers: list[np.ndarray] = field(default_factory=list)

    def wide(self, block: np.ndarray, slot: int) -> np.ndarray:
        """``block`` as float64 in a reused buffer (fresh arrays per block cost page faults)."""
        while len(self.buffers) <= slot:
            self.buffers.append(np.empty(BLOCK, np.float64))
        out = self.buffers[slot][: block.size]
        np.copyto(out, block)
        return out


def _decades(err: np.ndarray) -> np.ndarray:
    """Counts per ``BINS`` bucket; |error| ≥ 100 lands in the last one (as if clipped).

    Fourteen threshold counts are ~10× faster than ``np.histogram`` or log10 on big blocks.
    """
    below = [np.count_nonzero(err < edge) for edge in BINS[1:-1]]
    return np.diff(np.array([0, *below, err.size], dtype=np.int64))


def _finite_block(
    sums: _Sums, x: np.ndarray, y: np.ndarray, rtol: float, atol: float
) -> tuple[np.ndarray, np.ndarray]:
    """The common case, no NaN/inf on either side: no masks, far fewer passes."""
    err = np.abs(x - y)
    rel = err / np.maximum(np.abs(y), EPS)
    sums.count += x.size
    sums.finite += x.size
    sums.within += int(np.count_nonzero((err <= atol) | (rel <= rtol)))
    top, top_rel = float(err.max()), float(rel.max())
    total, total_rel = float(err.sum(dtype=np.float64)), float(rel.sum(dtype=np.float64))
    sums.max_abs = sums.all_max_abs = max(sums.max_abs, top)
    sums.max_rel = sums.all_max_rel = max(sums.max_rel, top_rel)
    sums.sum_abs += total
    sums.all_sum_abs += total
    sums.all_sum_rel += total_rel
    wide_x, wide_y = sums.wide(x, 0), sums.wide(y, 1)
    sums.dot += float(wide_x @ wide_y)
    sums.norm_a += float(wide_x @ wide_x)
    sums.norm_b += float(wide_y @ wide_y)
    wide_x -= wide_y
    sums.norm_diff += float(wide_x @ wide_x)
    sums.histogram += _decades(err)
    return err, rel


def _block(
    sums: _Sums, x: np.ndarray, y: np.ndarray, rtol: float, atol: float
) -> tuple[np.ndarray, np.ndarray]:
    if np.isfinite(x).all() and np.isfinite(y).all():
        return _finite_block(sums, x, y, rtol, atol)
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    both = nan_x & nan_y
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(x - y)
        err[both] = 0.0  # NaN where the reference has NaN too is agreement, not error
        rel = err / np.maximum(np.abs(y), EPS)
    rel[both] = 0.0
    err_nan = np.isnan(err) | np.isnan(rel)
    sums.count += x.size
    sums.within += int((~err_nan & ((err <= atol) | (rel <= rtol))).sum())
    sums.nan_error += int(err_nan.sum())
    sums.nan_mismatch += int((nan_x ^ nan_y).sum())
    sums.inf += int(np.isinf(x).sum() + np.isinf(y).sum())
    sums.no_number += int((~np.isfinite(x) & ~np.isfinite(y)).sum())
    valid = ~err_nan
    if valid.any():
        sums.all_max_abs = max(sums.all_max_abs, float(err[valid].max()))
        sums.all_sum_abs += float(err[valid].sum(dtype=np.float64))
        sums.all_max_rel = max(sums.all_max_rel, float(rel[valid].max()))
        sums.all_sum_rel += float(rel[valid].sum(dtype=np.float64))
    finite = np.isfinite(err)
    if finite.any():
        fe = err[finite]
        sums.finite += fe.size
        sums.max_abs = max(sums.max_abs, float(fe.max()))
        sums.sum_abs += float(fe.sum(dtype=np.float64))
        sums.max_rel = max(sums.max_rel, float(rel[finite].max()))
        fx = x[finite].astype(np.float64)
        fy = y[finite].astype(np.float64)
        sums.dot += float(fx @ fy)
        sums.norm_a += float(fx @ fx)
        sums.norm_b += float(fy @ fy)
        diff = fx - fy
        sums.norm_diff += float(diff @ diff)
        sums.histogram += _decades(fe)
    return err, rel


class Comparator:
    """Statistics of one output accumulated over batches (a folder of inputs is compared in
    full, not just its first batch), in blocks: memory stays flat for big tensors."""

    def __init__(self, name: str, tolerances: Tolerances) -> None:
        self.name = name
        self.tolerances = tolerances
        self.rtol, self.atol = tolerances.for_output(name)
        self.sums = _Sums()
        self.kept: list[tuple[np.ndarray, np.ndarray]] = []
        self.shape: list[int] | None = None
        self.batches = 0
        self.mismatch = ""
        self.ref_max = 0.0  # largest finite |value| of each side: is atol bigger than the data?
        self.got_max = 0.0

    def add(self, got: np.ndarray, want: np.ndarray) -> None:
        self.batches += 1
        if got.shape != want.shape:
            self.mismatch = (
                self.mismatch or f"shape {list(got.shape)} vs expected {list(want.shape)}"
            )
            self.shape = list(want.shape)
            return
        self.shape = list(want.shape) if self.shape is None else self._grow(want.shape)
        wide = np.float64 in (got.dtype, want.dtype) or not (
            np.issubdtype(got.dtype, np.floating) and np.issubdtype(want.dtype, np.floating)
        )
        dtype = np.float64 if wide else np.float32
        a, b = np.ravel(got), np.ravel(want)
        keep = self.tolerances.statistic in ("median", "quantile")
        for start in range(0, a.size, BLOCK):
            x = a[start : start + BLOCK].astype(dtype, copy=False)
            y = b[start : start + BLOCK].astype(dtype, copy=False)
            self.got_max = max(self.got_max, _finite_max(x))
            self.ref_max = max(self.ref_max, _finite_max(y))
            err, rel = _block(self.sums, x, y, self.rtol, self.atol)
            if keep:
                self.kept.append((err, rel))

    def _grow(self, shape: tuple[int, ...]) -> list[int]:
        """The shape reported for several batches: the batch axis summed."""
        assert self.shape is not None
        if len(shape) == len(self.shape) and shape and list(shape[1:]) == self.shape[1:]:
            return [self.shape[0] + shape[0], *self.shape[1:]]
        return self.shape

    def result(self) -> OutputComparison:
        nan = float("nan")
        sums = self.sums
        if self.mismatch or self.shape is None:
            return OutputComparison(
                self.name, self.shape or [], False, nan, nan, nan, nan, 0.0, 0, 0, [], [],
                self.mismatch or "no batch was compared",
            )  # fmt: skip
        passed = _decide(self.tolerances, sums, self.kept, self.rtol, self.atol)
        norm = np.sqrt(sums.norm_a) * np.sqrt(sums.norm_b)
        has = sums.finite > 0
        denominator = np.sqrt(sums.norm_b)
        diff = float(np.sqrt(sums.norm_diff))
        return OutputComparison(
            name=self.name,
            shape=self.shape,
            passed=passed,
            max_abs=sums.max_abs if has else nan,
            mean_abs=sums.sum_abs / sums.finite if has else nan,
            max_rel=sums.max_rel if has else nan,
            cosine=float(sums.dot / norm) if norm > 0 else (1.0 if diff == 0 else 0.0),
            within=sums.within / sums.count if sums.count else 1.0,
            nan=sums.nan_mismatch,
            inf=sums.inf,
            histogram=[int(c) for c in sums.histogram],
            bins=BINS,
            rel_l2=diff / float(denominator) if denominator > 0 else (0.0 if diff == 0 else inf),
            ref_max_abs=self.ref_max,
            got_max_abs=self.got_max,
            batches=self.batches,
            values=sums.count,
            no_number=sums.no_number,
        )


def _finite_max(x: np.ndarray) -> float:
    """The largest finite |value|. Two reductions where every value is finite (a NaN or inf
    makes their result non-finite): the masked path was a third of comparing a tensor."""
    if not x.size:
        return 0.0
    top = max(abs(float(x.max())), abs(float(x.min())))
    if math.isfinite(top):
        return top
    with np.errstate(invalid="ignore"):
        top = np.nanmax(np.abs(np.where(np.isfinite(x), x, 0.0)))
    return float(top)


def compare(
    name: str, got: np.ndarray, want: np.ndarray, tolerances: Tolerances
) -> OutputComparison:
    """Statistics of one tensor pair (``Comparator`` for several batches)."""
    comparator = Comparator(name, tolerances)
    comparator.add(got, want)
    return comparator.result()


# Below this, an output holds no signal to compare: every float32 value this small is
# (nearly) subnormal, and any two models agree on zeros.
ESSENTIALLY_ZERO = 1e-30


def judge_scale(c: OutputComparison, tolerances: Tolerances, note: str = "") -> None:
    """The element check is scale-blind: with outputs near 0 (random-weight networks give
    ~1e-12) ``atol`` passes any two models, and with outputs near 1e6 ``atol`` alone would fail
    the same model rounded differently. So the verdict also asks the relative overall error,
    which does not care about scale: rel L2 ≤ ``tolerances.rel_l2_for`` — the same model up to
    rounding passes at any scale, a different model fails at any scale. Only outputs that are
    (essentially) all zero on both sides are inconclusive."""
    if c.reason:
        return
    scale = max(c.ref_max_abs, c.got_max_abs)
    if c.values and c.no_number == c.values:  # NaN (or inf) on both sides everywhere
        c.passed, c.inconclusive = False, True
        c.reason = (
            f"inconclusive: both outputs are NaN or inf in all {c.values:,} values — nothing "
            "to compare; the model computes no number on these inputs (check the inputs, the "
            "weights, a division or log of zero)" + (f" ({note})" if note else "")
        )
        return
    if scale <= ESSENTIALLY_ZERO:
        c.passed, c.inconclusive = False, True
        zero = "all zero" if scale == 0 else "essentially zero"
        if c.no_number:  # zeros and NaN: both said, never "all zero" over NaN
            zero = f"NaN or inf in {c.no_number:,} of {c.values:,} values and {zero} elsewhere"
        c.reason = (
            f"inconclusive: both outputs are {zero} "
            f"(largest |value| {scale:.3g}), and any two models agree on zeros — feed inputs "
            "that make a signal (real data: --inputs DIR) or check the weights"
            + (f" ({note})" if note else "")
        )
        return
    limit = tolerances.rel_l2_for(c.name)
    rtol, atol = tolerances.for_output(c.name)
    if not c.passed:
        # At a large scale (outputs ~1e6) rounding alone exceeds atol, and near a zero crossing
        # the element's relative error is large too: when every element is within rtol of the
        # output's own range and the overall error is rounding-sized, it is the same model.
        if not c.nan and not c.inf and c.max_abs <= rtol * scale and c.rel_l2 <= min(limit, rtol):
            c.passed = True
            c.reason = (
                f"passes at this output's scale: every element is within rtol {rtol:g} of its "
                f"largest |value| {scale:.3g} (max abs {c.max_abs:.3g}), rel L2 {c.rel_l2:.3g}"
            )
        return
    if c.rel_l2 > limit:
        c.passed = False
        c.reason = (
            f"elements pass only through atol {atol:g}: rel L2 {c.rel_l2:.3g} > {limit:g} "
            f"(cosine {c.cosine:.3f}) — the outputs differ" + (f" ({note})" if note else "")
        )


def _decide(
    tolerances: Tolerances,
    sums: _Sums,
    kept: list[tuple[np.ndarray, np.ndarray]],
    rtol: float,
    atol: float,
) -> bool:
    if sums.nan_error:
        return False  # NaN is always a mismatch
    if tolerances.statistic == "elemwise" or not sums.count:
        return sums.within == sums.count
    if tolerances.statistic == "max":
        return sums.all_max_abs <= atol or sums.all_max_rel <= rtol
    if tolerances.statistic == "mean":
        return sums.all_sum_abs / sums.count <= atol or sums.all_sum_rel / sums.count <= rtol
    errors = np.concatenate([e for e, _ in kept])
    relative = np.concatenate([r for _, r in kept])
    return _reduce_passes(tolerances, errors, relative, rtol, atol)


def _reduce_passes(
    tolerances: Tolerances, errors: np.ndarray, relative: np.ndarray, rtol: float, atol: float
) -> bool:
    if tolerances.statistic == "median":
        return bool(np.median(errors) <= atol or np.median(relative) <= rtol)
    q = tolerances.quantile
    return bool(np.quantile(errors, q) <= atol or np.quantile(relative, q) <= rtol)
