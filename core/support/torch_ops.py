"""Which PyTorch ops a model calls, from a ``torch.export`` dry run in the worker.

The export panel (model sources: Python file, torchvision name, TorchScript, ExportedProgram)
reuses ``aten_ops_of``; today the job dry-runs the bundled samples.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.support.result import SampleAtenOps
from deploylens.core.support.torch_exporters import base_name


def aten_ops_of(module: Any, example_inputs: tuple[Any, ...]) -> dict[str, int]:
    """{``namespace::op``: calls} of the exported graph (before the exporter's decompositions)."""
    import torch

    try:
        program = torch.export.export(module, example_inputs, strict=False)
    except Exception as exc:  # torch.export failures are findings for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"torch.export could not trace the model: {first[:300]}") from None
    counts: Counter[str] = Counter()
    for node in program.graph.nodes:
        if node.op == "call_function":
            name = node.target.name() if hasattr(node.target, "name") else str(node.target)
            counts[base_name(name)] += 1
    return dict(sorted(counts.items()))


def sample_aten_job(ctx: Any, params: dict[str, Any]) -> SampleAtenOps:
    from deploylens.core.pytorch.source import samples_module
    from deploylens.core.support.request import SampleAtenRequest

    models = samples_module()
    name = SampleAtenRequest.from_params(params).sample
    if name not in models.SAMPLES:
        raise UserError(f"No bundled sample '{name}'; choose from {', '.join(models.SAMPLES)}.")
    ctx.progress(0.2, "building the module (imports torch)")
    module, inputs = models.build(name)
    ctx.progress(0.5, "torch.export dry run")
    return SampleAtenOps(name, aten_ops_of(module, inputs))
