"""Export a torchvision model (weights=None) to ONNX for the graph benchmark.

python bench/export_torchvision.py resnet50 torchscript OUT.onnx
"""

from __future__ import annotations

import sys
import warnings


def main(name: str, exporter: str, out: str) -> None:
    import torch
    import torchvision

    model = getattr(torchvision.models, name)(weights=None).eval()
    example = (torch.randn(1, 3, 224, 224),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            out,
            dynamo=exporter == "dynamo",
            opset_version=18 if exporter == "dynamo" else 17,
            external_data=exporter != "dynamo",
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
