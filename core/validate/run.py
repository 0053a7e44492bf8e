"""The ``validate.outputs`` job: the same inputs through ONNX Runtime and a reference (PyTorch
eager, or ONNX Runtime with graph optimizations off when there is no torch model)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.data.feeds import batch_of, feed_batches
from deploylens.core.errors import UserError
from deploylens.core.pytorch.source import ModelSource
from deploylens.core.validate.compare import Comparator, judge_scale
from deploylens.core.validate.result import ValidationResult
from deploylens.core.validate.tolerances import Tolerances


def session(path: str, optimized: bool = True, plugins: list[Any] | None = None) -> Any:
    from deploylens.core.ort_session import plugin_session

    return plugin_session(path, plugins or [], optimized)[0]


def source_notes(torch_source: ModelSource | None) -> list[str]:
    """What the reader must know about the reference before trusting a verdict."""
    if torch_source is not None and torch_source.kind == "torchvision":
        return [
            f"torchvision:{torch_source.target} is built with random weights (weights=None, "
            f"seed {torch_source.seed}): it is the right reference only for an ONNX file "
            "exported from that same random model; for a trained model give the code or "
            "checkpoint it came from (FILE.py:factory)."
        ]
    return []


def _torch_module(source: ModelSource) -> Any:
    from deploylens.core.pytorch.source import load_model

    module, _, _ = load_model(source)
    return module


def _torch_outputs(module: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import torch

    from deploylens.core.pytorch.outputs import to_numpy_list

    with torch.no_grad():
        result = module(*[torch.from_numpy(array) for array in feeds.values()])
    return to_numpy_list(result)


def validate_outputs(
    path: str,
    torch_source: ModelSource | None,
    npz: str,
    tolerances: Tolerances,
    seed: int = 0,
    plugins: list[Any] | None = None,
    layerwise: bool = False,
    budget_mb: float = 256.0,
    progress: Any = None,
    scratch: str | None = None,
    preprocess: str = "",
) -> ValidationResult:
    started = time.perf_counter()
    sess = session(path, plugins=plugins)
    names = [o.name for o in sess.get_outputs()]
    module = _torch_module(torch_source) if torch_source else None
    reference_session = None
    if module is not None:
        reference = "PyTorch eager"
    else:
        reference = "ONNX Runtime, graph optimizations off"
        reference_session = session(path, optimized=False, plugins=plugins)
    comparators = [Comparator(name, tolerances) for name in names]
    first: dict[str, np.ndarray] | None = None
    samples = 0
    count = 0
    for feeds in feed_batches(sess, npz, seed, preprocess):
        first = first if first is not None else feeds
        count += 1
        samples += batch_of(feeds)
        got = sess.run(None, feeds)
        if module is not None:
            want = _torch_outputs(module, feeds)
        else:
            assert reference_session is not None
            want = reference_session.run(None, feeds)
        if len(want) != len(got):
            raise UserError(
                f"The model has {len(got)} outputs but the reference produced {len(want)}."
            )
        for comparator, g, w in zip(comparators, got, want, strict=True):
            comparator.add(g, w)
        del got, want
        if progress is not None:
            progress(0.5 * min(count / 64, 1.0), f"compared batch {count}")
    if first is None:
        raise UserError(f"{Path(npz).name} gave no input batch.")
    notes = source_notes(torch_source)
    comparisons = [c.result() for c in comparators]
    for comparison in comparisons:
        judge_scale(comparison, tolerances, "reference with random weights" if notes else "")
    if npz and Path(npz).is_dir():
        used = f"all {samples} samples of {npz} in {count} batch{'es' * (count != 1)}"
    elif npz:
        used = f"the arrays in {Path(npz).name}"
    else:
        used = f"one batch of seeded random inputs (seed {seed}, uniform in [-1, 1])"
    result = ValidationResult(
        model=path,
        reference=reference,
        candidate="ONNX Runtime (CPU)",
        inputs={k: list(v.shape) for k, v in first.items()},
        inputs_used=used,
        batches=count,
        samples=samples,
        notes=notes,
        seed=seed if not npz else None,
        inputs_file=npz,
        preprocess=preprocess,
        tolerances=tolerances,
        outputs=comparisons,
        passed=all(c.passed for c in comparisons),
    )
    if layerwise:
        import onnx

        from deploylens.core.validate.layerwise import compare_layers

        result.layerwise = compare_layers(
            onnx.load(path),
            first,
            tolerances,
            torch_module=module,
            plugins=plugins,
            budget_mb=budget_mb,
            progress=(lambda f, m: progress(0.5 + 0.5 * f, m)) if progress else None,
            scratch=scratch,
        )
        if count > 1:
            result.layerwise.inputs_used = (
                f"the first batch ({batch_of(first)} samples) of the {count}"
            )
    result.seconds = time.perf_counter() - started
    return result


def validate_job(ctx: Any, params: dict[str, Any]) -> ValidationResult:
    from deploylens.core.plugin_api import load_plugins
    from deploylens.core.validate.request import ValidateRequest

    request = ValidateRequest.from_params(params)
    ctx.progress(0.1, "running ONNX Runtime and the reference")
    plugins, _ = load_plugins(request.plugin_entries)
    return validate_outputs(
        request.path,
        request.torch,
        request.inputs,
        request.tolerances,
        request.seed,
        list(plugins.values()),
        layerwise=request.layerwise,
        budget_mb=request.budget_mb,
        progress=lambda f, m: ctx.progress(0.2 + 0.8 * f, m),
        scratch=ctx.workdir,
        preprocess=request.preprocess,
    )
