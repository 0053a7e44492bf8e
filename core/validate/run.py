"""The ``validate.outputs`` job: the same inputs through ONNX Runtime and a reference (PyTorch
eager, or ONNX Runtime with graph optimizations off when there is no torch model)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deploylens.core.data.feeds import batch_of
from deploylens.core.errors import UserError
from deploylens.core.pytorch.call import call_torch
from deploylens.core.pytorch.source import ModelSource
from deploylens.core.validate.result import ValidationResult
from deploylens.core.validate.tolerances import Tolerances

if TYPE_CHECKING:  # onnx: not in the CLI's import of this module
    from deploylens.core.model.mapped_weights import MappedModel
    from deploylens.core.validate.records import Layerwise


def session(
    path: str,
    optimized: bool = True,
    plugins: list[Any] | None = None,
    custom: set[str] | None = None,
) -> Any:
    from deploylens.core.ort_session import plugin_session

    return plugin_session(path, plugins or [], optimized, custom)[0]


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


def _torch_reference(source: ModelSource) -> tuple[Any, dict[str, Any]]:
    """The PyTorch module and its own example inputs by name (``{}`` when it brings none)."""
    from deploylens.core.pytorch.source import load_model

    module, inputs, names = load_model(source, need_inputs=False)
    if not inputs:
        return module, {}
    names = list(getattr(module, "input_names", None) or names)
    if len(names) < len(inputs):
        return module, {}  # unnamed examples: the ONNX file's inputs decide
    return module, {n: t.detach().cpu().numpy() for n, t in zip(names, inputs, strict=False)}


def _example_feeds(sess: Any, example: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The reference's own example inputs when they fit the ONNX file's inputs exactly
    (names, ranks, fixed dimensions, kinds), else None."""
    from deploylens.core.data.feeds import fitted_feeds

    metas = sess.get_inputs()
    if not example or any(m.name not in example for m in metas):
        return None
    try:
        return fitted_feeds({m.name: example[m.name] for m in metas}, metas, "the example")
    except UserError:
        return None


def _example_sentence(feeds: dict[str, np.ndarray]) -> str:
    parts = []
    for name, array in feeds.items():
        if np.issubdtype(array.dtype, np.floating):
            parts.append(f"{name} {array.dtype} in [{array.min():.3g}, {array.max():.3g}]")
        else:
            low, high = int(array.min()), int(array.max())
            parts.append(f"{name} {array.dtype} " + (f"all {low}" if low == high else
                                                      f"in [{low}, {high}]"))  # fmt: skip
    return "the PyTorch source's own example inputs: " + "; ".join(parts)


def _batches(
    sess: Any,
    model: Any,
    npz: str,
    seed: int,
    preprocess: str,
    example: dict[str, np.ndarray],
    notes: list[str],
) -> tuple[Any, str]:
    """The input batches and the sentence that says what they are (``notes``: what of the
    given inputs went unused)."""
    from deploylens.core.data.feeds import feed_batches, random_sentence

    fitted = None if npz else _example_feeds(sess, example)
    if fitted is not None:
        return iter([fitted]), _example_sentence(fitted)
    model = None if npz else model
    batches = feed_batches(sess, npz, seed, preprocess, model, notes)
    if npz:
        return batches, ""
    return batches, random_sentence(sess.get_inputs(), seed, model)


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
    import onnx

    from deploylens.core.model.mapped_weights import MappedModel, read_mapped
    from deploylens.core.ort_session import custom_domains, run_feeds
    from deploylens.core.pytorch.outputs import flatten
    from deploylens.core.validate.pairing import OutputsComparator

    started = time.perf_counter()
    # one parse serves the session's domain check, the inputs' description and the layer-wise
    # pass (three parses of vit_b_16's 346 MB were 1.5 s of CPU); its large inline weights stay
    # in the mapped file (onnx.load copied them twice: 0.35 s), and external weights are read
    # for the layer-wise pass only, once ONNX Runtime has opened the model
    read = read_mapped(path) or MappedModel(onnx.load(path, load_external_data=False))
    model: Any = read.model
    custom = custom_domains(model)
    sess = session(path, plugins=plugins, custom=custom)
    names = [o.name for o in sess.get_outputs()]
    module, example = _torch_reference(torch_source) if torch_source else (None, {})
    reference_session = None
    if module is not None:
        reference = "PyTorch eager"
    else:
        reference = "ONNX Runtime, graph optimizations off"
        reference_session = session(path, optimized=False, plugins=plugins, custom=custom)
    outputs = OutputsComparator(names, tolerances)
    input_notes: list[str] = []
    batches, drawn = _batches(sess, model, npz, seed, preprocess, example, input_notes)
    first: dict[str, np.ndarray] | None = next(batches, None)
    if first is None:
        raise UserError(f"{Path(npz).name} gave no input batch.")
    layers: Layerwise | None = None
    first_want: list[Any] = []  # PyTorch's outputs on the first batch, from the layer-wise pass
    share = 0.5 if layerwise else 0.0  # of the progress, the layer-wise pass's
    given = Path(npz).name if npz else ""
    # the first batch runs before the layer-wise pass: inputs the model cannot take are said as
    # such here (a layer-wise session's raw error read "the model is malformed")
    first_got: list[Any] = [run_feeds(sess, first, path, given)]
    if layerwise:
        layers = _layers(
            read, path, first, tolerances, module, plugins, budget_mb, scratch,
            (lambda f, m: progress(share * f, m)) if progress else None, first_want.append,
        )  # fmt: skip
    del model, read  # not held through the runs: the batches keep what they need
    samples = 0
    count = 0
    for feeds in itertools.chain([first], batches):
        count += 1
        samples += batch_of(feeds)
        got = first_got.pop() if first_got else run_feeds(sess, feeds, path, given)
        if module is not None:
            want = flatten(first_want.pop() if first_want else call_torch(module, feeds))
        else:
            assert reference_session is not None
            want = list(zip(names, run_feeds(reference_session, feeds, path, given), strict=True))
        outputs.add(got, want)
        del got, want
        if progress is not None:
            progress(share + (1 - share) * min(count / 64, 1.0), f"compared batch {count}")
    notes = source_notes(torch_source)
    comparisons = outputs.results("reference with random weights" if notes else "")
    if npz and Path(npz).is_dir():
        used = f"all {samples} samples of {npz} in {count} batch{'es' * (count != 1)}"
    elif npz:
        used = f"the arrays in {Path(npz).name}"
    else:
        used = drawn
    result = ValidationResult(
        model=path,
        reference=reference,
        candidate="ONNX Runtime (CPU)",
        inputs={k: list(v.shape) for k, v in first.items()},
        inputs_used=used,
        batches=count,
        samples=samples,
        notes=notes + list(getattr(module, "load_notes", [])) + input_notes + outputs.notes,
        seed=seed if not npz else None,
        inputs_file=npz,
        preprocess=preprocess,
        tolerances=tolerances,
        outputs=comparisons,
        passed=all(c.passed for c in comparisons) and not outputs.structure_problems(),
        problems=outputs.structure_problems(),
        paired=outputs.pairing.how if outputs.pairing else "",
    )
    if layers is not None and count > 1:
        layers.inputs_used = f"the first batch ({batch_of(first)} samples) of the {count}"
    result.layerwise = layers
    result.seconds = time.perf_counter() - started
    return result


def _layers(
    read: MappedModel,
    path: str,
    feeds: dict[str, np.ndarray],
    tolerances: Tolerances,
    module: Any,
    plugins: list[Any] | None,
    budget_mb: float,
    scratch: str | None,
    progress: Any,
    torch_output: Any,
) -> Layerwise:
    """The layer-wise pass on the first batch; its external weights are read only now, once
    ONNX Runtime has opened the model."""
    from deploylens.core.validate.layerwise import compare_layers

    read.external_tensors_loaded(Path(path).parent)
    return compare_layers(
        read.model,
        feeds,
        tolerances,
        torch_module=module,
        plugins=plugins,
        budget_mb=budget_mb,
        progress=progress,
        scratch=scratch,
        torch_output=torch_output,
        mapped=read.arrays,
    )


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
