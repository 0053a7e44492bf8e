"""torchvision imported without TorchDynamo (core/pytorch/deferred_dynamo.py): the import is
~1.4 s of CPU cheaper, torchvision still works, and TorchDynamo is the real one whenever it is
imported later. Each case runs in a fresh interpreter: pytest's may have imported TorchDynamo."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torchvision")

IMPORTED_WITHOUT_DYNAMO = """
import sys
import torch
from deploylens.core.pytorch.deferred_dynamo import import_deferring_dynamo

torchvision = import_deferring_dynamo("torchvision")
assert "torch._dynamo" not in sys.modules, "TorchDynamo was imported"
assert "torch._dynamo.utils" not in sys.modules, "the stand-in stayed"
model = torchvision.models.get_model("resnet18", weights=None).eval()
with torch.no_grad():
    assert model(torch.rand(1, 3, 32, 32)).shape == (1, 1000)
boxes = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0]])
pooled = torchvision.ops.roi_align(torch.rand(1, 2, 8, 8), boxes, output_size=2)
assert pooled.shape == (1, 2, 2, 2)
assert "torch._dynamo" not in sys.modules, "a forward pass imported TorchDynamo"

module = sys.modules["torchvision.ops.roi_align"]
import torch._dynamo.utils as real
assert getattr(real, "__file__", "").endswith("utils.py"), real
assert sys.modules["torch._dynamo.utils"] is real and torch._dynamo.utils is real
assert module.is_compile_supported("cpu") == real.is_compile_supported("cpu")

class Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2

exported = torch.export.export(Tiny(), (torch.rand(2, 3),))  # TorchDynamo's own path
assert torch.equal(exported.module()(torch.ones(2, 3)), torch.full((2, 3), 2.0))
print("ok")
"""

# What validate and export do with ``torchvision:NAME``.
NAMED_MODEL = """
import sys
from deploylens.core.pytorch.source import load_model, parse_spec

module, _, _ = load_model(parse_spec("torchvision:resnet18"), need_inputs=False)
assert type(module).__name__ == "ResNet"
assert "torch._dynamo" not in sys.modules, "TorchDynamo was imported"
print("ok")
"""

# Something that needs more than is_compile_supported while the stand-in is in place gets the
# real module at once, and the real one stays once the import is done.
ANY_OTHER_NAME = """
import sys
import torch
from deploylens.core.pytorch.deferred_dynamo import dynamo_deferred

with dynamo_deferred():
    stand_in = sys.modules["torch._dynamo.utils"]
    counters = stand_in.counters  # not the one function torchvision takes
    assert sys.modules["torch._dynamo.utils"] is not stand_in
real = sys.modules["torch._dynamo.utils"]
assert getattr(real, "__file__", "").endswith("utils.py") and real.counters is counters
with dynamo_deferred():  # TorchDynamo loaded: nothing stands in any more
    assert sys.modules["torch._dynamo.utils"] is real
print("ok")
"""


@pytest.mark.parametrize(
    "script",
    [IMPORTED_WITHOUT_DYNAMO, NAMED_MODEL, ANY_OTHER_NAME],
    ids=["torchvision", "named-model", "other-names"],
)
def test_torchvision_imports_without_torchdynamo_which_is_real_when_imported(script: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
