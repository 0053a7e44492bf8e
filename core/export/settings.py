"""Export settings, and the reproducers: a ``deploylens export`` line and a standalone script."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deploylens.core.codegen import docstring, identifier, literal
from deploylens.core.pytorch.source import ModelSource

TORCHSCRIPT, DYNAMO = "torchscript", "dynamo"


@dataclass
class ExportSettings:
    exporter: str = DYNAMO
    opset: int | None = None  # None: the exporter's default
    output: str = "model.onnx"
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    constant_folding: bool = True
    optimize: bool = True  # dynamo only
    external_data: bool = False
    plugins: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExportSettings:
        axes = {
            k: {int(a): n for a, n in v.items()} for k, v in data.get("dynamic_axes", {}).items()
        }
        return cls(**{**data, "dynamic_axes": axes})

    def export_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``torch.onnx.export``, only what the user set."""
        kwargs: dict[str, Any] = {"dynamo": self.exporter == DYNAMO}
        if self.opset is not None:
            kwargs["opset_version"] = self.opset
        if self.input_names:
            kwargs["input_names"] = list(self.input_names)
        if self.output_names:
            kwargs["output_names"] = list(self.output_names)
        if self.dynamic_axes:
            kwargs["dynamic_axes"] = self.dynamic_axes
        if self.exporter == TORCHSCRIPT:
            kwargs["do_constant_folding"] = self.constant_folding
        else:
            kwargs["optimize"] = self.optimize
            kwargs["external_data"] = self.external_data
        return kwargs


def parse_dynamic_axes(items: list[str]) -> dict[str, dict[int, str]]:
    """``["x:0:batch", "output:0:batch"]`` → ``{"x": {0: "batch"}, "output": {0: "batch"}}``."""
    from deploylens.core.errors import UserError

    axes: dict[str, dict[int, str]] = {}
    for item in filter(None, (i.strip() for i in items)):
        try:
            tensor, axis, label = item.split(":")
            axes.setdefault(tensor, {})[int(axis)] = label
        except ValueError:
            raise UserError(
                f"Dynamic axis '{item}': use TENSOR:AXIS:LABEL, e.g. x:0:batch."
            ) from None
    return axes


def python_script(source: ModelSource, settings: ExportSettings) -> str:
    """A standalone script that performs the same export with torch.onnx alone."""
    lines = [
        docstring("Reproduces a DeployLens export with torch.onnx alone."),
        "",
        "import torch",
        "",
    ]
    if source.kind == "sample":
        lines += [
            "# the bundled sample's module (resources/samples/models.py in DeployLens)",
            "import importlib.util",
            "from importlib.resources import files",
            'path = files("deploylens.resources") / "samples" / "models.py"',
            'spec = importlib.util.spec_from_file_location("models", str(path))',
            "models = importlib.util.module_from_spec(spec)",
            "spec.loader.exec_module(models)",
            f"model, example = models.build({literal(source.target)})",
        ]
    elif source.kind == "torchvision":
        lines += [
            "import torchvision",
            "",
            f"model = torchvision.models.get_model({literal(source.target)}, weights=None).eval()",
        ]
    elif source.kind == "python":
        lines += [
            "import importlib.util",
            "",
            "spec = importlib.util.spec_from_file_location("
            f"'user_model', {literal(source.target)})",
            "user_model = importlib.util.module_from_spec(spec)",
            "spec.loader.exec_module(user_model)",
            f"model = getattr(user_model, {literal(source.factory)})()",
            "model = model[0] if isinstance(model, tuple) else model",
            "model.eval()",
        ]
    elif source.kind == "torchscript":
        lines += [f"model = torch.jit.load({literal(source.target)}, map_location='cpu').eval()"]
    else:
        lines += [f"model = torch.export.load({literal(source.target)}).module()"]
    if source.kind != "sample":
        if source.inputs_npz:
            lines += [
                "import numpy as np",
                f"with np.load({literal(source.inputs_npz)}, allow_pickle=False) as data:",
                "    example = tuple(torch.from_numpy(data[k]) for k in data.files)",
            ]
        else:
            lines.append(f"generator = torch.Generator().manual_seed({literal(int(source.seed))})")
            shapes = (
                ", ".join(
                    f"torch.rand({literal([int(d) for d in spec.shape])}, generator=generator)"
                    f" * {literal(float(spec.high - spec.low))} + {literal(float(spec.low))}"
                    for spec in source.inputs
                )
                or "torch.randn(1, 3, 224, 224)"
            )
            lines.append(f"example = ({shapes},)")
    opset = settings.opset or (18 if settings.exporter == "dynamo" else 17)
    if settings.plugins:
        lines += [
            "",
            "# op plugins (DeployLens's entry points), applied as the tool applies them",
            "from deploylens.core.plugin_api import load_plugins",
            "",
            "plugins, _ = load_plugins()",
            "extra = {}",
        ]
    for plugin in settings.plugins:
        lines.append(f"plugin = plugins[{literal(plugin)}]")
        if settings.exporter == "dynamo":
            lines += [
                "if plugin.custom_translation:",
                "    extra.setdefault('custom_translation_table', {}).update("
                "plugin.custom_translation())",
            ]
        else:
            lines += [
                "if plugin.register_torchscript:",
                f"    plugin.register_torchscript({literal(int(opset))})",
                "if plugin.custom_opsets:",
                "    extra.setdefault('custom_opsets', {}).update(plugin.custom_opsets)",
            ]
    kwargs = ",\n    ".join(
        f"{identifier(k, 'export option')}={literal(v)}"
        for k, v in settings.export_kwargs().items()
    )
    lines += [
        "",
        "torch.onnx.export(",
        "    model,",
        "    example,",
        f"    {literal(settings.output)},",
        f"    {kwargs},",
    ]
    if settings.plugins:
        lines.append("    **extra,")
    lines += [")", ""]
    return "\n".join(lines)
