"""What the zoo's verdicts are checked against, computed without DeployLens's own code paths:

- ``independent_agreement``: the model rebuilt here (transformers / timm / torchvision / the
  factory file), its outputs flattened by torch's own pytree, ONNX Runtime run on the same
  inputs, detections compared after sorting their rows — does the ONNX file compute what
  PyTorch computes?
- ``rtx_parse`` / ``rtx_build``: a plain ``tensorrt_rtx`` script's parse and ahead-of-time build;
- ``slim_fold``: onnxslim's fold of the same file.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers.zoo import Architecture

REL_L2 = 1e-3


def _torch_model(arch: Architecture, spec: str) -> tuple[Any, dict[str, Any] | None]:
    """The model as its library builds it (same seed, so the same random weights), and the
    factory's own example when it has one."""
    import torch

    if spec.startswith("hf:"):
        import transformers

        folder = spec[3:]
        config = json.loads((Path(folder) / "config.json").read_text())
        cls = getattr(transformers, config["architectures"][0])
        model = cls.from_pretrained(folder, dtype=torch.float32).eval()
        model.config.use_cache = False
        return model, None
    torch.manual_seed(0)
    if spec.startswith("timm:"):
        import timm

        return timm.create_model(spec[5:], pretrained=False).eval(), None
    if spec.startswith("torchvision:"):
        import inspect

        import torchvision

        builder = torchvision.models.get_model_builder(spec[len("torchvision:") :])
        options: dict[str, Any] = {"weights": None}
        if "weights_backbone" in inspect.signature(builder).parameters:
            options["weights_backbone"] = None
        return builder(**options).eval(), None
    path, _, name = spec.rpartition(":")
    loader = importlib.util.spec_from_file_location("zoo_truth_factories", path)
    module = importlib.util.module_from_spec(loader)  # type: ignore[arg-type]
    loader.loader.exec_module(module)  # type: ignore[union-attr]
    model, example = getattr(module, name)()
    return model, {f"#{i}": t for i, t in enumerate(example)}


def _inputs(model: Any, session: Any, example: dict[str, Any] | None) -> dict[str, np.ndarray]:
    """Inputs for both sides: the factory's example, else made from the ONNX file's inputs and
    the model's config (ids within the vocabulary, masks of ones)."""
    metas = session.get_inputs()
    rng = np.random.default_rng(7)
    config = getattr(model, "config", None)
    if example is not None:
        return {m.name: t.numpy() for m, t in zip(metas, example.values(), strict=False)}
    if config is None:  # an image model by name: the file's own shape
        return {m.name: rng.uniform(-1, 1, [d if isinstance(d, int) else 1 for d in m.shape])
                .astype(np.float32) for m in metas}  # fmt: skip
    feeds = {}
    for meta in metas:
        fixed = [d if isinstance(d, int) and d > 0 else None for d in meta.shape]
        free = {
            "input_values": [1, 8000],
            "pixel_values": [1, 3, getattr(config, "image_size", 64),
                             getattr(config, "image_size", 64)],
        }.get(meta.name, [1, 12, 12, 12][: len(fixed)])  # fmt: skip
        shape = [f if f is not None else free[i] for i, f in enumerate(fixed)]
        if meta.name == "input_features":
            shape = [1, config.num_mel_bins, 2 * config.max_source_positions]
        if "int64" in meta.type:
            if "mask" in meta.name:
                feeds[meta.name] = np.ones(shape, np.int64)
            elif "type" in meta.name:
                feeds[meta.name] = np.zeros(shape, np.int64)
            else:
                feeds[meta.name] = rng.integers(0, config.vocab_size, shape).astype(np.int64)
        else:
            feeds[meta.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return feeds


def _leaves(value: Any) -> list[np.ndarray]:
    from torch.utils import _pytree

    return [np.asarray(leaf.detach()) for leaf in _pytree.tree_leaves(value) if leaf is not None]


def _sorted_rows(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Detection outputs (boxes [N, 4] first) with their rows in one canonical order."""
    boxes = arrays[0]
    if boxes.ndim != 2 or boxes.shape[1] != 4 or any(len(a) != len(boxes) for a in arrays):
        return arrays
    order = np.lexsort(np.round(boxes, 3).T[::-1])
    return [a[order] for a in arrays]


def independent_agreement(arch: Architecture, spec: str, onnx_path: Path) -> tuple[bool, str]:
    """(agrees, why) for the exported file against PyTorch, on inputs made here."""
    import onnxruntime as ort
    import torch

    model, example = _torch_model(arch, spec)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    feeds = _inputs(model, session, example)
    got = session.run(None, feeds)
    with torch.no_grad():
        if example is not None or not spec.startswith("hf:"):
            want = _leaves(model(*[torch.from_numpy(v) for v in feeds.values()]))
        else:
            named = {k: torch.from_numpy(v) for k, v in feeds.items()}
            want = _leaves(model(**named, return_dict=True))
    if len(got) != len(want):
        return False, f"{len(got)} ONNX outputs, {len(want)} PyTorch leaves"
    if arch.family.startswith("detection") and arch.kind == "python":
        if got[0].shape != want[0].shape:
            return False, f"{len(got[0])} detections vs {len(want[0])}"
        got, want = _sorted_rows(list(got)), _sorted_rows(list(want))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return False, f"output {i}: shape {g.shape} vs {w.shape}"
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        norm = np.linalg.norm(w64)
        rel = np.linalg.norm(g64 - w64) / norm if norm else np.linalg.norm(g64)
        if rel > REL_L2:
            return False, f"output {i}: rel L2 {rel:.3g}"
    return True, "agrees"


def rtx_parse(onnx_path: Path) -> tuple[bool, str]:
    """A plain TensorRT-RTX parse (the parser's own first error when it fails)."""
    import tensorrt_rtx as trt

    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    ok = parser.parse_from_file(str(onnx_path))
    errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
    return bool(ok), (errors[0][:200] if errors else "")


def rtx_build(onnx_path: Path, shapes: dict[str, list[int]]) -> tuple[bool, str]:
    """A plain TensorRT-RTX ahead-of-time build for sm89 (dynamic inputs fixed at ``shapes``)."""
    import tensorrt_rtx as trt

    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        return False, str(parser.get_error(0))[:200]
    config = builder.create_builder_config()
    config.num_compute_capabilities = 1
    config.set_compute_capability(trt.ComputeCapability.SM89, 0)
    dynamic = [network.get_input(i) for i in range(network.num_inputs)]
    dynamic = [t for t in dynamic if any(d < 0 for d in t.shape)]
    if dynamic:
        profile = builder.create_optimization_profile()
        for tensor in dynamic:
            shape = shapes[tensor.name]
            profile.set_shape(tensor.name, shape, shape, shape)
        config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    return plan is not None, "" if plan is not None else "the builder returned no plan"


def slim_fold(onnx_path: Path, out: Path) -> int:
    """onnxslim's fold and simplify of the file: the node count it leaves."""
    import onnx
    import onnxslim

    model = onnxslim.slim(str(onnx_path))
    onnx.save(model, str(out))
    return len(model.graph.node)


def same_outputs(a: Path, b: Path, feeds: dict[str, np.ndarray]) -> bool:
    """Whether two ONNX files compute the same outputs (shapes, and values to 1e-4) here."""
    import onnxruntime as ort

    runs = []
    for path in (a, b):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        runs.append(session.run(None, {k: v for k, v in feeds.items() if k in names}))
    for x, y in zip(*runs, strict=True):
        if x.shape != y.shape or not np.allclose(x, y, rtol=1e-4, atol=1e-4, equal_nan=True):
            return False
    return True
