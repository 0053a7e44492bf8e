"""Export settings, and the reproducers: a ``deploylens export`` line and a standalone script."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deploylens.core.codegen import docstring, identifier, literal
from deploylens.core.pytorch.source import InputSpec, ModelSource
from deploylens.core.request_parts import cli

TORCHSCRIPT, DYNAMO = "torchscript", "dynamo"
EXPORT = "the export"  # the --help section of the settings' flags


@dataclass
class ExportSettings:
    exporter: str = field(
        default=DYNAMO,
        metadata=cli(
            "torch.export-based dynamo (default) or the TorchScript tracer",
            choices=(TORCHSCRIPT, DYNAMO),
            always=True,
            group=EXPORT,
        ),
    )
    opset: int | None = field(  # None: the exporter's default
        default=None,
        metadata=cli("ONNX opset (default: the exporter's own)", type=int, group=EXPORT),
    )
    output: str = field(
        default="model.onnx",
        metadata=cli(
            "the ONNX file (default model.onnx)",
            option="--out",
            metavar="FILE",
            always=True,
            group=EXPORT,
        ),
    )
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(
        default_factory=list,
        metadata=cli(
            "name the outputs in order (repeatable; default: a dict output's keys)",
            option="--output-name",
            repeat=True,
            metavar="NAME",
            group=EXPORT,
        ),
    )
    # --dynamic TENSOR:AXIS:LABEL, by hand (one flag per axis, not per field item)
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    constant_folding: bool = field(
        default=True,
        metadata=cli(
            "torchscript: keep constant parts",
            negate=True,
            option="--no-constant-folding",
            group=EXPORT,
        ),
    )
    optimize: bool = field(  # dynamo only
        default=True,
        metadata=cli(
            "dynamo: skip the optimizer", negate=True, option="--no-optimize", group=EXPORT
        ),
    )
    external_data: bool = field(
        default=False, metadata=cli("weights in a file beside the model", group=EXPORT)
    )
    plugins: list[str] = field(
        default_factory=list,
        metadata=cli("op plugin to apply", option="--plugin", repeat=True, group=EXPORT),
    )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExportSettings:
        axes = {
            k: {int(a): n for a, n in v.items()} for k, v in data.get("dynamic_axes", {}).items()
        }
        return cls(**{**data, "dynamic_axes": axes})

    def export_kwargs(self, varargs: bool = False) -> dict[str, Any]:
        """Keyword arguments for ``torch.onnx.export``, only what the user set. ``varargs``: the
        model's ``forward(*args)`` (an ``hf:DIR`` model's wrapper), whose dynamic axes the dynamo
        exporter takes only as ``dynamic_shapes`` of its ``args``, in input order."""
        kwargs: dict[str, Any] = {"dynamo": self.exporter == DYNAMO}
        if self.opset is not None:
            kwargs["opset_version"] = self.opset
        if self.input_names:
            kwargs["input_names"] = list(self.input_names)
        if self.output_names:
            kwargs["output_names"] = list(self.output_names)
        if self.dynamic_axes and varargs and self.exporter == DYNAMO:
            order = self.input_names or list(self.dynamic_axes)
            kwargs["dynamic_shapes"] = {"args": tuple(self.dynamic_axes.get(n, {}) for n in order)}
        elif self.dynamic_axes:
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


def _model_lines(source: ModelSource) -> list[str]:
    """The lines that build ``model`` (and ``example``, where the source brings its own)."""
    if source.kind == "sample":
        return [
            "# the bundled sample's module (resources/samples/models.py in DeployLens)",
            "import importlib.util",
            "from importlib.resources import files",
            'path = files("deploylens.resources") / "samples" / "models.py"',
            'spec = importlib.util.spec_from_file_location("models", str(path))',
            "models = importlib.util.module_from_spec(spec)",
            "spec.loader.exec_module(models)",
            f"model, example = models.build({literal(source.target)})",
        ]
    if source.kind == "torchvision":
        return [
            "import inspect",
            "",
            "import torchvision",
            "",
            f"builder = torchvision.models.get_model_builder({literal(source.target)})",
            "options = {'weights': None}",
            "if 'weights_backbone' in inspect.signature(builder).parameters:",
            "    options['weights_backbone'] = None  # no download",
            f"torch.manual_seed({literal(int(source.seed))})",
            "model = builder(**options).eval()",
            *_weights_lines(source),
        ]
    if source.kind == "timm":
        return [
            "import timm",
            "",
            f"torch.manual_seed({literal(int(source.seed))})",
            f"model = timm.create_model({literal(source.target)}, pretrained=False).eval()",
            *_weights_lines(source),
        ]
    if source.kind == "hf":
        from deploylens.core.pytorch.huggingface import TASKS

        auto = TASKS.get(source.task, "") if source.task else ""
        loader = f"transformers.{auto}" if auto else "_class_of(folder)"
        return [
            "import json",
            "from pathlib import Path",
            "",
            "import transformers",
            "",
            f"folder = {literal(source.target)}",
            "",
            "",
            "def _class_of(folder):",
            "    name = json.loads((Path(folder) / 'config.json').read_text())['architectures'][0]",
            "    return getattr(transformers, name)  # transformers' class, not the folder's code",
            "",
            "",
            "class Wrapped(torch.nn.Module):",
            "    def __init__(self, model, names):",
            "        super().__init__()",
            "        self.model, self.names = model, names",
            "",
            "    def forward(self, *args):",
            "        return self.model(**dict(zip(self.names, args)), return_dict=True)",
            "",
            "",
            f"torch.manual_seed({literal(int(source.seed))})",
            f"hf_model = {loader}.from_pretrained(folder, local_files_only=True, "
            "use_safetensors=True, dtype=torch.float32).eval()",
            "hf_model.config.use_cache = False",
        ]
    if source.kind == "python":
        return [
            "import importlib.util",
            "",
            "spec = importlib.util.spec_from_file_location("
            f"'user_model', {literal(source.target)})",
            "user_model = importlib.util.module_from_spec(spec)",
            "spec.loader.exec_module(user_model)",
            f"torch.manual_seed({literal(int(source.seed))})",
            f"result = getattr(user_model, {literal(source.factory)})()",
            "model, example = result if isinstance(result, tuple) else (result, None)",
            "model.eval()",
        ]
    if source.kind == "torchscript":
        return [f"model = torch.jit.load({literal(source.target)}, map_location='cpu').eval()"]
    return [f"model = torch.export.load({literal(source.target)}).module()"]


# An hf:DIR script made before the model was loaded (Copy as Python): inputs from its config.
HF_EXAMPLE = [
    "config, main = hf_model.config, hf_model.main_input_name",
    "generator = torch.Generator().manual_seed(0)",
    "if main == 'input_ids':",
    "    length = min(16, getattr(config, 'max_position_embeddings', None) or 16)",
    "    ids = torch.randint(0, config.vocab_size, (1, length), generator=generator)",
    "    names, example = ['input_ids', 'attention_mask'], (ids, torch.ones_like(ids))",
    "elif main == 'pixel_values':",
    "    size = getattr(config, 'image_size', 224)",
    "    names, example = [main], (torch.rand(1, 3, size, size, generator=generator) * 2 - 1,)",
    "elif main == 'input_values':",
    "    names, example = [main], (torch.rand(1, 16000, generator=generator) * 2 - 1,)",
    "else:",
    "    frames = 2 * config.max_source_positions",
    "    shape = (1, config.num_mel_bins, frames)",
    "    names, example = [main], (torch.rand(*shape, generator=generator) * 2 - 1,)",
]


def _weights_lines(source: ModelSource) -> list[str]:
    if not source.weights:
        return []
    return [
        f"state = torch.load({literal(source.weights)}, map_location='cpu', weights_only=True)",
        "model.load_state_dict(state.get('state_dict', state))",
    ]


def _draw(spec: InputSpec) -> str:
    """One example input as the job drew it: floats uniform in their range, integers (ids,
    masks) within theirs."""
    shape = literal([int(d) for d in spec.shape])
    low, high = spec.value_range()
    if spec.dtype.startswith(("float", "bfloat")):
        return (
            f"(torch.rand({shape}, generator=generator) * {literal(float(high - low))} + "
            f"{literal(float(low))}).to(torch.{identifier(spec.dtype, 'dtype')})"
        )
    if spec.dtype == "bool":
        return f"torch.randint(0, 2, {shape}, generator=generator).bool()"
    return (
        f"torch.randint({literal(int(low))}, {literal(int(high) + 1)}, {shape}, "
        f"generator=generator, dtype=torch.{identifier(spec.dtype, 'dtype')})"
    )


def python_script(
    source: ModelSource, settings: ExportSettings, drawn: list[InputSpec] | None = None
) -> str:
    """A standalone script that performs the same export with torch.onnx alone (and the library
    the model comes from). ``drawn``: the example inputs the job really used (names, shapes,
    dtypes, value ranges), so ids stay integers within the vocabulary and a factory's own example
    is kept rather than replaced by floats."""
    lines = [
        docstring("Reproduces a DeployLens export with torch.onnx alone."),
        "",
        "import torch",
        "",
    ]
    lines += _model_lines(source)
    if source.inputs_npz:
        lines += [
            "import numpy as np",
            f"with np.load({literal(source.inputs_npz)}, allow_pickle=False) as data:",
            "    example = tuple(torch.from_numpy(data[k]) for k in data.files)",
        ]
    elif source.inputs or (drawn and source.kind not in ("sample", "python")):
        specs = source.inputs or drawn or []
        lines.append(f"generator = torch.Generator().manual_seed({literal(int(source.seed))})")
        lines.append(f"example = ({''.join(_draw(spec) + ', ' for spec in specs)})")
    elif source.kind == "hf":
        lines += HF_EXAMPLE
    elif source.kind not in ("sample", "python"):
        lines.append("example = (torch.randn(1, 3, 224, 224),)")
    if source.kind == "hf":
        names = [spec.name for spec in source.inputs or drawn or []]
        lines.append(
            f"model = Wrapped(hf_model, {literal(names)})"
            if names
            else "model = Wrapped(hf_model, names)"
        )
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
        for k, v in settings.export_kwargs(varargs=source.kind == "hf").items()
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
