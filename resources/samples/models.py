"""The seeds' scenarios as small PyTorch modules with example inputs.

Each factory returns ``(module, example_inputs)``. ``build_samples.py`` exports them and records
which exporter/opset works; the export, validation and diagnosis panels use them as test cases.
torch is imported inside functions: this file is importable without it.
"""

from __future__ import annotations

from typing import Any


def _nn() -> Any:
    import torch

    return torch


def asinh_model() -> tuple[Any, tuple[Any, ...]]:
    """torch.asinh: the classic "operator not supported" seed."""
    torch = _nn()

    class Asinh(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.asinh(x) * 0.5

    return Asinh().eval(), (torch.linspace(-3, 3, 24).reshape(2, 3, 4),)


def roll_model(with_dims: bool) -> tuple[Any, tuple[Any, ...]]:
    """torch.roll, flattened (no dims) or along given dims."""
    torch = _nn()

    class Roll(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            if with_dims:
                return torch.roll(x, shifts=(1, -2), dims=(1, 2))
            return torch.roll(x, shifts=3)

    return Roll().eval(), (torch.arange(2 * 4 * 5, dtype=torch.float32).reshape(2, 4, 5),)


def custom_function_model(with_symbolic: bool) -> tuple[Any, tuple[Any, ...]]:
    """An autograd.Function, with or without a ``symbolic`` that emits custom_domain::customOp2."""
    torch = _nn()

    class ScaledSoftsign(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return 2.0 * x / (1.0 + x.abs())

    if with_symbolic:

        class ScaledSoftsignOp(ScaledSoftsign):
            @staticmethod
            def symbolic(g: Any, x: Any) -> Any:
                return g.op("custom_domain::customOp2", x, alpha_f=2.0).setType(x.type())

        function = ScaledSoftsignOp
    else:
        function = ScaledSoftsign

    class CustomFunctionNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            return function.apply(self.linear(x))

    torch.manual_seed(0)
    return CustomFunctionNet().eval(), (torch.randn(2, 8),)


def deform_conv_model() -> tuple[Any, tuple[Any, ...]]:
    """Conv2d(3, 18, 3) computing the offsets of a torchvision DeformConv2d(3, 3, 3)."""
    torch = _nn()
    from torchvision.ops import DeformConv2d

    class DeformNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.offset = torch.nn.Conv2d(3, 18, 3, padding=1)
            self.deform = DeformConv2d(3, 3, 3, padding=1)

        def forward(self, x: Any) -> Any:
            return self.deform(x, self.offset(x))

    torch.manual_seed(0)
    return DeformNet().eval(), (torch.randn(1, 3, 8, 8),)


def small_cnn_model() -> tuple[Any, tuple[Any, ...]]:
    """A small CNN with named blocks, so exported node names carry a module hierarchy."""
    torch = _nn()
    nn = torch.nn

    def block(cin: int, cout: int) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    class SmallCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = block(3, 16)
            self.stage1 = nn.Sequential(block(16, 32), nn.MaxPool2d(2))
            self.stage2 = nn.Sequential(block(32, 64), nn.MaxPool2d(2))
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

        def forward(self, image: Any) -> Any:
            return self.head(self.stage2(self.stage1(self.stem(image))))

    torch.manual_seed(0)
    model = SmallCNN().eval()
    for module in model.modules():  # non-trivial batch-norm statistics
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model, (torch.rand(1, 3, 32, 32),)


# name -> (factory, keyword arguments, input names, what the scenario is about)
SAMPLES: dict[str, tuple[Any, dict[str, Any], list[str], str]] = {
    "asinh": (asinh_model, {}, ["x"], "torch.asinh"),
    "roll_dims": (roll_model, {"with_dims": True}, ["x"], "torch.roll with dims"),
    "roll_flat": (roll_model, {"with_dims": False}, ["x"], "torch.roll without dims"),
    "custom_fn_symbolic": (
        custom_function_model,
        {"with_symbolic": True},
        ["x"],
        "autograd.Function whose symbolic emits custom_domain::customOp2",
    ),
    "custom_fn_plain": (
        custom_function_model,
        {"with_symbolic": False},
        ["x"],
        "autograd.Function without a symbolic",
    ),
    "deform_conv": (
        deform_conv_model,
        {},
        ["x"],
        "Conv2d(3,18,3) feeding torchvision.ops.DeformConv2d(3,3,3)",
    ),
    "small_cnn": (small_cnn_model, {}, ["image"], "a small CNN with a module hierarchy"),
}


def build(name: str) -> tuple[Any, tuple[Any, ...]]:
    factory, kwargs, _, _ = SAMPLES[name]
    return factory(**kwargs)
