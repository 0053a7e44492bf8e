"""Rebuild the bundled samples: export each scenario with both exporters, keep what exports
cleanly, and record every outcome (including failures, the seeds of the diagnosis panel) in
``manifest.json``.

Run with the ``full`` extra installed:  python resources/samples/build_samples.py
"""

from __future__ import annotations

import io
import json
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402  (the sibling module, importable without installing)

EXPORTERS = (("dynamo", 18), ("torchscript", 17))
ORT_MAX_IR = 10  # keep files readable by older ONNX Runtime releases too
# Extra (exporter, opset) tries: DeformConv exists from opset 19 only, so the default 18 fails.
EXTRA_ATTEMPTS = {"deform_conv": (("dynamo", 19),)}


def _export(
    model: Any, inputs: tuple[Any, ...], names: list[str], exporter: str, opset: int, path: Path
) -> None:
    import torch

    kwargs: dict[str, Any] = {
        "input_names": names,
        "output_names": ["output"],
        "opset_version": opset,
    }
    if exporter == "dynamo":
        kwargs.update(dynamo=True, optimize=True, external_data=False)
    else:
        kwargs.update(dynamo=False, custom_opsets={"custom_domain": 1})
    sink = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(sink), redirect_stderr(sink):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, str(path), **kwargs)


def _check_and_run(
    path: Path, inputs: tuple[Any, ...], names: list[str], expected: Any
) -> dict[str, Any]:
    import numpy as np
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    if model.ir_version > ORT_MAX_IR:
        model.ir_version = ORT_MAX_IR
        onnx.save(model, str(path))
    onnx.checker.check_model(model, full_check=True)
    record: dict[str, Any] = {
        "opset": {entry.domain or "ai.onnx": entry.version for entry in model.opset_import},
        "ir_version": model.ir_version,
        "nodes": len(model.graph.node),
        "bytes": path.stat().st_size,
    }
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        feeds = {name: tensor.numpy() for name, tensor in zip(names, inputs, strict=True)}
        (got,) = session.run(None, feeds)
        record["ort_max_abs_error"] = float(np.max(np.abs(got - expected.detach().numpy())))
    except Exception as exc:  # a custom-domain op has no ORT kernel: that is the scenario
        record["ort_error"] = str(exc).strip().splitlines()[0][:300]
    return record


def build_all() -> dict[str, Any]:
    import numpy as np
    import torch

    manifest: dict[str, Any] = {"torch": torch.__version__, "samples": {}}
    for name, (_, _, input_names, about) in models.SAMPLES.items():
        model, inputs = models.build(name)
        with torch.no_grad():
            expected = model(*inputs)
        np.savez(
            HERE / f"{name}.inputs.npz",
            **{n: t.numpy() for n, t in zip(input_names, inputs, strict=True)},
        )
        entry: dict[str, Any] = {
            "about": about,
            "factory": f"models.py:{models.SAMPLES[name][0].__name__}",
            "kwargs": models.SAMPLES[name][1],
            "inputs": [
                {"name": n, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
                for n, t in zip(input_names, inputs, strict=True)
            ],
            "exports": {},
        }
        for exporter, opset in (*EXPORTERS, *EXTRA_ATTEMPTS.get(name, ())):
            key = exporter if (exporter, opset) in EXPORTERS else f"{exporter}@{opset}"
            path = HERE / f"{name}.{key.replace('@', '')}.onnx"
            try:
                _export(model, inputs, input_names, exporter, opset, path)
                entry["exports"][key] = {
                    "file": path.name,
                    **_check_and_run(path, inputs, input_names, expected),
                }
            except Exception as exc:
                path.unlink(missing_ok=True)
                message = str(exc).strip().splitlines()
                entry["exports"][key] = {
                    "requested_opset": opset,
                    "error": type(exc).__name__ + (": " + message[0][:400] if message else ""),
                }
            print(f"{name:20s} {key:12s} {'ok' if 'file' in entry['exports'][key] else 'FAILED'}")
        manifest["samples"][name] = entry
    manifest["batched"] = build_batched()
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


BATCHED_INPUTS = 8


def build_batched() -> dict[str, Any]:
    """small_cnn with a dynamic batch axis and a handful of real inputs: the sample a sweep
    over batch sizes, a calibration and a folder-less validate can use (every other sample has a
    fixed batch of 1 and one input, so the README's sweep ran 1 of its points)."""
    import numpy as np
    import torch

    model, (example,) = models.build("small_cnn")
    generator = torch.Generator().manual_seed(7)
    images = torch.rand((BATCHED_INPUTS, *example.shape[1:]), generator=generator)
    path = HERE / "small_cnn.batched.onnx"
    sink = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(sink), redirect_stderr(sink):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (images[:1],), str(path), dynamo=False, opset_version=17,
                          input_names=["image"], output_names=["output"],
                          dynamic_axes={"image": {0: "batch"}, "output": {0: "batch"}})  # fmt: skip
    np.savez(HERE / "small_cnn.batched.inputs.npz", image=images.numpy())
    with torch.no_grad():
        expected = model(images)
    record = _check_and_run(path, (images,), ["image"], expected)
    print(f"{'small_cnn.batched':20s} {'torchscript':12s} ok")
    return {
        "about": "small_cnn with a dynamic batch axis and its inputs",
        "file": path.name,
        "inputs_file": "small_cnn.batched.inputs.npz",
        "inputs": [{"name": "image", "shape": ["batch", *example.shape[1:]], "dtype": "float32"}],
        "samples": BATCHED_INPUTS,
        **record,
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["--batched"]:  # only the batched sample, into the existing manifest
        manifest = json.loads((HERE / "manifest.json").read_text())
        manifest["batched"] = build_batched()
        (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    else:
        build_all()
