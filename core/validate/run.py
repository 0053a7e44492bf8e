"""The ``validate.outputs`` job: the same inputs through ONNX Runtime and a reference (PyTorch
eager, or ONNX Runtime with graph optimizations off when there is no torch model)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from deploylens.core.errors import UserError
from deploylens.core.validate.compare import compare
from deploylens.core.validate.tolerances import Tolerances

RESULT_VERSION = 1
ORT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def session(path: str, optimized: bool = True, plugins: list[Any] | None = None) -> Any:
    from deploylens.core.export.verify import plugin_session

    return plugin_session(path, plugins or [], optimized)[0]


def make_feeds(
    sess: Any, npz: str = "", seed: int = 0, preprocess: str = ""
) -> dict[str, np.ndarray]:
    """Inputs from an .npz (no pickles), the first batch of a data folder (images with a
    preprocessing spec, or arrays), or seeded random ones matching the model's inputs."""
    if npz and Path(npz).is_dir():
        from deploylens.core.data.preprocess import batch_size, batches, parse_preprocess

        metas = sess.get_inputs()
        inputs = [(m.name, list(m.shape)) for m in metas]
        spec = parse_preprocess(preprocess) if preprocess else None
        feeds = next(batches(npz, inputs, batch_size(inputs[0][1]), spec, limit=1))
        return {m.name: feeds[m.name].astype(ORT_DTYPES.get(m.type, np.float32)) for m in metas}
    if npz:
        from deploylens.core.data.arrays import load_arrays

        data = load_arrays(npz)
        missing = [i.name for i in sess.get_inputs() if i.name not in data]
        if missing:
            raise UserError(
                f"{Path(npz).name} has no array for input '{missing[0]}' "
                f"(it has {', '.join(data) or 'none'})."
            )
        return {i.name: data[i.name] for i in sess.get_inputs()}
    rng = np.random.default_rng(seed)
    feeds = {}
    for meta in sess.get_inputs():
        dtype = ORT_DTYPES.get(meta.type)
        if dtype is None:
            raise UserError(f"Input '{meta.name}' is {meta.type}: give its values in an .npz.")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in meta.shape]
        if np.issubdtype(dtype, np.floating):
            feeds[meta.name] = rng.uniform(-1, 1, shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[meta.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[meta.name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds


def _torch_module(source_dict: dict[str, Any]) -> Any:
    from deploylens.core.export.sources import ModelSource, load_model

    module, _, _ = load_model(ModelSource.from_dict(source_dict))
    return module


def _torch_outputs(module: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import torch

    from deploylens.core.export.verify import to_numpy_list

    with torch.no_grad():
        result = module(*[torch.from_numpy(array) for array in feeds.values()])
    return to_numpy_list(result)


def validate_outputs(
    path: str,
    torch_source: dict[str, Any] | None,
    npz: str,
    tolerances: Tolerances,
    seed: int = 0,
    plugins: list[Any] | None = None,
    layerwise: bool = False,
    budget_mb: float = 256.0,
    progress: Any = None,
    scratch: str | None = None,
    preprocess: str = "",
) -> dict[str, Any]:
    started = time.perf_counter()
    sess = session(path, plugins=plugins)
    feeds = make_feeds(sess, npz, seed, preprocess)
    got = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    module = _torch_module(torch_source) if torch_source else None
    if module is not None:
        reference = "PyTorch eager"
        want = _torch_outputs(module, feeds)
    else:
        reference = "ONNX Runtime, graph optimizations off"
        want = session(path, optimized=False, plugins=plugins).run(None, feeds)
    if len(want) != len(got):
        raise UserError(f"The model has {len(got)} outputs but the reference produced {len(want)}.")
    comparisons = [
        compare(name, g, w, tolerances) for name, g, w in zip(names, got, want, strict=True)
    ]
    del got, want
    result: dict[str, Any] = {
        "kind": "deploylens.validation",
        "version": RESULT_VERSION,
        "model": path,
        "reference": reference,
        "candidate": "ONNX Runtime (CPU)",
        "inputs": {k: list(v.shape) for k, v in feeds.items()},
        "seed": seed if not npz else None,
        "inputs_file": npz,
        "preprocess": preprocess,
        "tolerances": {
            "rtol": tolerances.rtol,
            "atol": tolerances.atol,
            "statistic": tolerances.statistic,
        },
        "outputs": [c.to_dict() for c in comparisons],
        "passed": all(c.passed for c in comparisons),
    }
    if layerwise:
        import onnx

        from deploylens.core.validate.layerwise import compare_layers

        result["layerwise"] = compare_layers(
            onnx.load(path),
            feeds,
            tolerances,
            torch_module=module,
            plugins=plugins,
            budget_mb=budget_mb,
            progress=progress,
            scratch=scratch,
        )
    result["seconds"] = time.perf_counter() - started
    return result


def validate_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    ctx.progress(0.1, "running ONNX Runtime and the reference")
    from deploylens.core.export.plugin_api import load_plugins

    tolerances = Tolerances(**params.get("tolerances", {}))
    plugins, _ = load_plugins(params.get("plugin_entries"))
    return validate_outputs(
        params["path"],
        params.get("torch"),
        params.get("inputs", ""),
        tolerances,
        int(params.get("seed", 0)),
        list(plugins.values()),
        layerwise=bool(params.get("layerwise", False)),
        budget_mb=float(params.get("budget_mb", 256.0)),
        progress=lambda f, m: ctx.progress(0.2 + 0.8 * f, m),
        scratch=ctx.workdir,
        preprocess=params.get("preprocess", ""),
    )
