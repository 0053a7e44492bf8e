"""How much INT8 costs: the Q/DQ model against the fp32 one on the same samples, through the
validate comparison (max/mean abs error, rel L2, cosine) plus top-1 agreement for classifiers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from deploylens.core.quantize.result import Accuracy
from deploylens.core.validate.compare import compare
from deploylens.core.validate.tolerances import Tolerances


def measure(
    fp32: Any,
    qdq: Any,
    feeds: Iterable[dict[str, np.ndarray]],
    progress: Callable[[int], None] | None = None,
) -> Accuracy:
    """Run both ORT sessions on every feed; statistics over the first output, all samples."""
    got_all, want_all = [], []
    agree = total = samples = 0
    classifier = True
    for number, feed in enumerate(feeds, 1):
        want = np.asarray(fp32.run(None, feed)[0], dtype=np.float32)
        got = np.asarray(qdq.run(None, feed)[0], dtype=np.float32)
        samples += int(want.shape[0]) if want.ndim else 1
        want_all.append(want.ravel())
        got_all.append(got.ravel())
        if want.ndim == 2 and want.shape[1] > 1:
            agree += int(np.sum(np.argmax(want, axis=1) == np.argmax(got, axis=1)))
            total += want.shape[0]
        else:
            classifier = False
        if progress:
            progress(number)
    if not want_all:
        return Accuracy(0, float("nan"), float("nan"), float("nan"), float("nan"), None)
    stats = compare("output", np.concatenate(got_all), np.concatenate(want_all), Tolerances())
    return Accuracy(
        samples=samples,
        max_abs=stats.max_abs,
        mean_abs=stats.mean_abs,
        rel_l2=stats.rel_l2,
        cosine=stats.cosine,
        top1_agreement=agree / total if classifier and total else None,
    )
