"""Harvest the node forms real exporters write into ``resources/support/exporter_forms.json``
(``core/support/forms.py``): the measured matrix probes each one, so a node is judged by the
form it has (a one-output LayerNormalization, MaxPool with kernel, strides and pads together,
Resize with sizes computed at run time) rather than by the spec examples' forms.

    python bench/harvest_forms.py [--out resources/support/exporter_forms.json] [--quick]

The models are exported here with both exporters (random weights, tiny where a config allows).
They are deliberately not the zoo's (``tests/helpers/zoo.py``): the zoo then tests whether forms
seen on other models carry over, not whether a model's own forms were recorded. Each model runs
once in ONNX Runtime to record the values small integer tensors take (a shape computed at run
time), which the probes feed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TORCHVISION = (
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "vit_b_16", "swin_t",
    "regnet_y_400mf", "squeezenet1_0", "shufflenet_v2_x0_5", "lraspp_mobilenet_v3_large",
    "fcn_resnet50", "densenet121", "mnasnet0_5",
)  # fmt: skip
TIMM = ("resnet18", "vit_tiny_patch16_224", "mobilenetv3_small_050", "levit_128s")
QUICK = ("resnet18", "vit_b_16")


def _models(quick: bool) -> list[tuple[str, Any, tuple[Any, ...]]]:
    import torch
    import torchvision

    found = []
    for name in QUICK if quick else TORCHVISION:
        torch.manual_seed(0)
        builder = torchvision.models.get_model_builder(name)
        options: dict[str, Any] = {"weights": None}
        if "segmentation" in builder.__module__:
            options.update(weights_backbone=None, aux_loss=False)
        size = 96 if "segmentation" in builder.__module__ else 224
        found.append((f"torchvision:{name}", builder(**options).eval(),
                      (torch.rand(1, 3, size, size) * 2 - 1,)))  # fmt: skip
    if quick:
        return found
    import timm

    for name in TIMM:
        torch.manual_seed(0)
        model = timm.create_model(name, pretrained=False).eval()
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        found.append((f"timm:{name}", model, (torch.rand(1, *size) * 2 - 1,)))
    found += _text_models()
    return found


def _text_models() -> list[tuple[str, Any, tuple[Any, ...]]]:
    import torch
    import transformers

    class Named(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.model(input_ids=ids, attention_mask=mask, return_dict=True)

    torch.manual_seed(0)
    small = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    models = [
        ("hf:RobertaModel", transformers.RobertaModel(transformers.RobertaConfig(**small))),
        ("hf:ElectraModel", transformers.ElectraModel(transformers.ElectraConfig(
            embedding_size=32, **small))),
        ("hf:MistralModel", transformers.MistralModel(transformers.MistralConfig(
            num_key_value_heads=1, use_cache=False, **small))),
    ]  # fmt: skip
    ids = torch.randint(0, 128, (1, 16))
    return [(n, Named(m.eval()).eval(), (ids, torch.ones_like(ids))) for n, m in models]


def _seen_values(model: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """The values the model's small integer tensors take on ``feeds`` (ONNX Runtime)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from deploylens.core.support.forms import SMALL

    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    constants = {t.name for t in model.graph.initializer}
    constants |= {n.output[0] for n in model.graph.node if n.op_type == "Constant"}
    wanted = []
    for value in inferred.graph.value_info:
        tensor = value.type.tensor_type
        dims = [d.dim_value for d in tensor.shape.dim]
        integer = tensor.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
        if integer and all(dims) and int(np.prod(dims)) <= SMALL and value.name not in constants:
            wanted.append(value)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(wanted)
    try:
        session = ort.InferenceSession(probe.SerializeToString(),
                                       providers=["CPUExecutionProvider"])  # fmt: skip
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds), strict=True))
    except Exception as exc:  # a model ORT cannot run: its forms keep random feeds
        print(f"    (no run-time values: {str(exc).splitlines()[0][:120]})")
        return {}


def harvest(quick: bool) -> dict[str, Any]:
    import onnx
    import torch

    from deploylens.core.support.forms import form_key, node_forms

    forms: dict[Any, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="deploylens-forms-"))
    for name, model, example in _models(quick):
        for exporter in ("dynamo", "torchscript"):
            path = work / "model.onnx"
            started = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    options = {"verbose": False} if exporter == "dynamo" else {}
                    names = [f"in{i}" for i in range(len(example))]
                    torch.onnx.export(model, example, str(path), dynamo=exporter == "dynamo",
                                      input_names=names, **options)  # fmt: skip
            except Exception as exc:
                print(f"  {name} {exporter}: export failed ({str(exc).splitlines()[0][:100]})")
                continue
            loaded = onnx.load(str(path))
            feeds = {f"in{i}": t.numpy() for i, t in enumerate(example)}
            found = node_forms(loaded, f"{name} ({exporter})", _seen_values(loaded, feeds))
            new = 0
            for form in found:
                key = form_key(form)
                if key in forms:
                    if form.sources[0] not in forms[key].sources:
                        forms[key].sources.append(form.sources[0])
                else:
                    forms[key] = form
                    new += 1
            took = time.perf_counter() - started
            print(f"  {name} {exporter}: {len(found)} nodes, {new} new forms ({took:.1f} s)")
    return {
        "about": "node forms of exported models, probed by the measured matrix "
        "(bench/harvest_forms.py; core/support/forms.py)",
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "forms": [f.to_dict() for f in forms.values()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "resources/support/exporter_forms.json"))
    parser.add_argument("--quick", action="store_true", help="two models (a smoke run)")
    args = parser.parse_args()
    started = time.perf_counter()
    data = harvest(args.quick)
    text = json.dumps(data, separators=(",", ":"))
    Path(args.out).write_text(text)
    print(f"{len(data['forms'])} forms, {len(text) / 1024:.0f} KB, "
          f"{time.perf_counter() - started:.0f} s → {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
