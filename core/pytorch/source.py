"""Where a PyTorch model comes from, and how the worker loads it safely.

Specs: ``sample:asinh`` (bundled), ``torchvision:resnet18`` and ``timm:convnext_atto`` (random
init, or ``--weights FILE`` loaded weights-only), ``hf:DIR`` (a Hugging Face folder: config +
safetensors, ``core/pytorch/huggingface.py``), ``file.py:factory`` (user code: runs only with
consent, remembered per file hash), ``model.pt`` (TorchScript), ``model.pt2`` (ExportedProgram).
Checkpoints load with ``weights_only=True``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.consent import grant_consent, require_consent
from deploylens.core.errors import UserError
from deploylens.core.files import input_file

__all__ = ["grant_consent", "require_consent"]  # user code's consent lives in core/consent


@dataclass
class InputSpec:
    name: str
    shape: list[int]
    dtype: str = "float32"
    low: float | None = None  # None: by the input's meaning (floats in [-1, 1], ids, masks)
    high: float | None = None

    def value_range(self, vocabulary: int | None = None) -> tuple[float, float]:
        """[low, high] of the values drawn: as given, else floats in [-1, 1], a mask 0/1, and
        integer ids within the vocabulary (``vocabulary``: the model's smallest embedding)."""
        if self.low is not None and self.high is not None:
            return self.low, self.high
        if self.dtype.startswith(("float", "bfloat")):
            return -1.0, 1.0
        if "mask" in self.name.lower() or self.dtype == "bool":
            return 0.0, 1.0
        if "type" in self.name.lower():  # token_type_ids: segment 0
            return 0.0, 0.0
        return 0.0, float((vocabulary or 10) - 1)


@dataclass
class ModelSource:
    kind: str  # sample | torchvision | timm | hf | python | torchscript | exported_program
    target: str  # sample name, torchvision/timm name, folder or file path
    factory: str = ""  # for python files
    inputs: list[InputSpec] = field(default_factory=list)
    inputs_npz: str = ""
    seed: int = 0
    task: str = ""  # hf: the Optimum task (empty: from the config's architecture)
    weights: str = ""  # torchvision/timm: a state dict loaded weights-only (empty: random init)

    def spec(self) -> str:
        if self.kind == "python":
            return f"{self.target}:{self.factory}"
        if self.kind in NAMED_KINDS:
            return f"{self.kind}:{self.target}"
        return self.target

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSource:
        return cls(**{**data, "inputs": [InputSpec(**i) for i in data.get("inputs", [])]})


NAMED_KINDS = ("sample", "torchvision", "timm", "hf")
# every kind of source ``parse_spec`` makes (tests/core/test_fuzz.py holds each to a fuzz family)
SOURCE_KINDS = (*NAMED_KINDS, "python", "torchscript", "exported_program")
SPEC_HELP = "sample:NAME, torchvision:NAME, timm:NAME, hf:DIR, FILE.py:factory, MODEL.pt, MODEL.pt2"


def add_source_options(group: Any) -> None:
    """``--task`` and ``--weights``: what ``hf:DIR`` and ``torchvision:``/``timm:NAME`` take."""
    from deploylens.core.pytorch.huggingface import TASKS

    group.add_argument(
        "--task", default="", choices=["", *TASKS], metavar="TASK",
        help="hf:DIR: the task to export (default: from the config's architecture); "
        + ", ".join(TASKS),
    )  # fmt: skip
    group.add_argument(
        "--weights", default="",
        help="torchvision:/timm:NAME: a state dict to load (weights only; default random init)",
    )  # fmt: skip


def source_options(source: ModelSource, task: str, weights: str) -> ModelSource:
    """``source`` with ``--task``/``--weights`` applied, refused where they mean nothing."""
    if task and source.kind != "hf":
        raise UserError("--task applies to hf:DIR sources only.")
    if weights and source.kind not in ("torchvision", "timm"):
        raise UserError("--weights applies to torchvision:NAME and timm:NAME only.")
    source.task = task
    source.weights = str(input_file(weights, "weights").resolve()) if weights else ""
    return source


def source_args(source: ModelSource) -> list[str]:
    """The ``--task``/``--weights`` flags that give ``source`` back."""
    args = ["--task", source.task] if source.task else []
    return args + (["--weights", source.weights] if source.weights else [])


def parse_spec(spec: str) -> ModelSource:
    if spec.startswith(("sample:", "torchvision:", "timm:")):
        kind, _, name = spec.partition(":")
        if not name:
            raise UserError(f"'{spec}': name the model after '{kind}:'.")
        return ModelSource(kind, name)
    if spec.startswith("hf:"):
        folder = spec[len("hf:") :]
        if not folder:
            raise UserError("'hf:': give the model's folder, as hf:DIR.")
        return ModelSource("hf", str(Path(folder).resolve()))
    if ".py:" in spec:
        path, _, factory = spec.rpartition(".py:")
        return ModelSource("python", str(Path(path + ".py").resolve()), factory)
    if spec.endswith(".py"):
        raise UserError(f"{spec}: name the factory too, as FILE.py:function.")
    if spec.endswith(".pt2"):
        return ModelSource("exported_program", str(input_file(spec, "ExportedProgram").resolve()))
    if spec.endswith((".pt", ".pth", ".ts")):
        return ModelSource("torchscript", str(input_file(spec, "TorchScript model").resolve()))
    raise UserError(
        f"'{spec}' is not a model source: use sample:NAME, torchvision:NAME, timm:NAME, "
        "hf:DIR (a Hugging Face folder), FILE.py:factory, MODEL.pt (TorchScript) or MODEL.pt2 "
        "(ExportedProgram)."
    )


INPUT_DTYPES = ("float32", "float16", "float64", "bfloat16", "int64", "int32", "int16", "int8",
                "uint8", "bool")  # fmt: skip
MAX_DIM = 2**31 - 1


def parse_input(text: str) -> InputSpec:
    """``name:1x3x224x224[:dtype[:low:high]]``; every part checked here, where it was typed
    (a 0 or negative dimension, an unknown dtype or an empty range is one sentence)."""
    import math

    usage = "use NAME:SHAPE[:DTYPE[:LOW:HIGH]], e.g. input_ids:1x16:int64:0:999"
    parts = text.split(":")
    if len(parts) < 2 or len(parts) == 4 or len(parts) > 5 or not parts[0]:
        raise UserError(f"Input '{text}': {usage}.")
    try:
        shape = [int(d) for d in parts[1].lower().split("x")]
    except ValueError:
        raise UserError(f"Input '{text}': the shape must be integers like 1x3x224x224.") from None
    if any(d <= 0 or d > MAX_DIM for d in shape):
        raise UserError(f"Input '{text}': every dimension must be between 1 and {MAX_DIM:,}.")
    dtype = parts[2] if len(parts) > 2 and parts[2] else "float32"
    if dtype not in INPUT_DTYPES:
        raise UserError(f"Input '{text}': unknown dtype '{dtype}' ({', '.join(INPUT_DTYPES)}).")
    spec = InputSpec(parts[0], shape, dtype)
    if len(parts) == 5:
        try:
            low, high = float(parts[3]), float(parts[4])
        except ValueError:
            raise UserError(f"Input '{text}': LOW and HIGH must be numbers; {usage}.") from None
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise UserError(f"Input '{text}': the range [{parts[3]}, {parts[4]}] is empty.")
        _check_range(text, dtype, low, high)
        spec.low, spec.high = low, high
    return spec


# what each dtype holds: values drawn outside it wrapped (int8 -1000..1000) or overflowed
INTEGER_RANGES = {
    "int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**15), 2**15 - 1), "int8": (-128, 127), "uint8": (0, 255), "bool": (0, 1),
}  # fmt: skip
FLOAT_LIMITS = {"float16": 65504.0, "bfloat16": 3.38e38, "float32": 3.4028e38}


def _check_range(text: str, dtype: str, low: float, high: float) -> None:
    """LOW:HIGH against what the dtype holds: whole numbers within an integer type's range
    (0.5:0.7 gave all zeros), finite values within a float type's."""
    import math

    if dtype in INTEGER_RANGES:
        least, most = INTEGER_RANGES[dtype]
        if math.ceil(low) > math.floor(high):
            raise UserError(
                f"Input '{text}': the range [{low:g}, {high:g}] holds no whole number, so a "
                f"{dtype} input would have no value to take."
            )
        if low < least or high > most:
            raise UserError(
                f"Input '{text}': [{low:g}, {high:g}] is outside what {dtype} holds "
                f"({least:,} to {most:,})."
            )
    elif dtype in FLOAT_LIMITS and max(abs(low), abs(high)) > FLOAT_LIMITS[dtype]:
        raise UserError(
            f"Input '{text}': [{low:g}, {high:g}] is outside what {dtype} holds "
            f"(±{FLOAT_LIMITS[dtype]:g})."
        )


# -- loading (in the worker) ----------
def _load_python(source: ModelSource) -> Any:
    require_consent(source.target)
    spec = importlib.util.spec_from_file_location("deploylens_user_model", source.target)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    factory = getattr(module, source.factory, None)
    if factory is None:
        raise UserError(f"{Path(source.target).name} has no callable '{source.factory}'.")
    return factory()


def samples_module() -> Any:
    from importlib.resources import files

    path = files("deploylens.resources") / "samples" / "models.py"
    spec = importlib.util.spec_from_file_location("deploylens_sample_models", str(path))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def load_model(
    source: ModelSource, need_inputs: bool = True
) -> tuple[Any, tuple[Any, ...], list[str]]:
    """(module in eval mode, example inputs, input names). ``need_inputs=False`` (validate:
    the inputs come from the ONNX file or the user's arrays) gives ``()`` where the source has
    no example of its own, instead of asking for ``--input``."""
    import torch

    names = [i.name for i in source.inputs]

    def examples() -> tuple[Any, ...]:
        return make_inputs(source) if need_inputs or source.inputs else ()

    if source.kind == "sample":
        models = samples_module()
        if source.target not in models.SAMPLES:
            raise UserError(
                f"No bundled sample '{source.target}'; choose from {', '.join(models.SAMPLES)}."
            )
        module, inputs = models.build(source.target)
        return module, inputs, names or list(models.SAMPLES[source.target][2])
    if source.kind == "hf":
        from deploylens.core.pytorch.huggingface import load_hf

        module, inputs, hf_names = load_hf(source.target, source.task, source.seed)
        if source.inputs or source.inputs_npz:
            inputs = make_inputs(source, module)
        return module, inputs, names or hf_names
    if source.kind in ("torchvision", "timm"):
        module = _named_model(source)
        if source.inputs or source.inputs_npz:
            inputs = make_inputs(source, module)
        else:
            inputs = (torch.randn(1, *_image_size(module, source.kind)),)
        return module, inputs, names or ["input"]
    if source.kind == "python":
        torch.manual_seed(source.seed)
        result = _load_python(source)
        module, inputs = result if isinstance(result, tuple) else (result, None)
        module = module.eval()
        if source.inputs or source.inputs_npz:
            inputs = make_inputs(source, module)
        inputs = tuple(inputs) if inputs else examples()
        return module, inputs, names or forward_names(module, len(inputs))
    if source.kind == "torchscript":
        module = _load_torchscript(Path(source.target))
        return module, examples(), names or ["input"]
    if source.kind == "exported_program":
        from deploylens.core.pytorch.pt2_archive import load_exported_program

        program = load_exported_program(source.target)
        return program.module(), examples(), names or ["input"]
    raise UserError(f"Unknown model source kind '{source.kind}'.")


def forward_names(module: Any, count: int) -> list[str]:
    """Input names for a model of several inputs: its ``forward``'s parameters, as the dynamo
    exporter names them (``input_ids``, ``attention_mask``); one input is "input"."""
    import inspect

    if count <= 1:
        return ["input"]
    try:
        parameters = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return ["input"]
    plain = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return plain[:count] if len(plain) >= count else ["input"]


def _named_model(source: ModelSource) -> Any:
    """A torchvision or timm model by name: random init (seeded), never a download — its
    backbone's pretrained weights are off too — or ``--weights FILE`` loaded weights-only."""
    import torch

    torch.manual_seed(source.seed)
    if source.kind == "timm":
        try:
            import timm
        except ImportError:
            raise UserError("timm:NAME needs timm in the worker's environment.",
                            "pip install timm") from None  # fmt: skip
        if source.target not in timm.list_models():
            close = timm.list_models(f"*{source.target[:6]}*")[:6]
            raise UserError(
                f"timm {timm.__version__} has no model '{source.target}'"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + "; `timm.list_models()` lists them."
            )
        module = timm.create_model(source.target, pretrained=False)
    else:
        import inspect

        from deploylens.core.pytorch.deferred_dynamo import import_deferring_dynamo

        torchvision = import_deferring_dynamo("torchvision")  # ~1.4 s of CPU less
        known = set(torchvision.models.list_models())
        if source.target not in known:
            close = sorted(n for n in known if source.target.lower()[:4] in n)[:6]
            raise UserError(
                f"torchvision {torchvision.__version__} has no model '{source.target}'"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + "; `torchvision.models.list_models()` lists them."
            )
        builder = torchvision.models.get_model_builder(source.target)
        options: dict[str, Any] = {"weights": None}
        if "weights_backbone" in inspect.signature(builder).parameters:
            options["weights_backbone"] = None  # its default downloads ImageNet weights
        module = builder(**options)
    if source.weights:
        _load_weights(module, Path(source.weights))
    return module.eval()


def _load_weights(module: Any, path: Path) -> None:
    import torch

    from deploylens.core.archive_bounds import check_zip_file

    input_file(path, "weights")
    size = path.stat().st_size
    if size == 0:
        raise UserError(f"{path.name} is empty: no state dict to load.")
    check_zip_file(path)  # a decompression bomb is refused before torch inflates it
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise UserError(_weights_refusal(path, exc)) from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise UserError(f"{path.name} holds a {type(state).__name__}, not a state dict.")
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        raise UserError(f"{path.name} does not fit the model: {_first_line(exc)}") from None


def _weights_refusal(path: Path, exc: BaseException) -> str:
    """Why ``torch.load(weights_only=True)`` refused ``path``, as what it is: a pickle that
    wants to run code, or a file that is damaged or no checkpoint at all — a truncated file
    was called "would run pickled code"."""
    said = _first_line(exc)
    if "Weights only load failed" in str(exc) or "Unsupported global" in str(exc):
        return (
            f"{path.name} is not a plain state dict: loading it would run pickled code, which "
            f"DeployLens refuses ({said})."
        )
    return f"{path.name} is not a readable PyTorch checkpoint (damaged or another format): {said}"


def _image_size(module: Any, kind: str) -> tuple[int, int, int]:
    """The (C, H, W) a named model expects: timm's pretrained config says it; torchvision's
    classifiers take 224."""
    config = getattr(module, "pretrained_cfg", None) or {}
    size = config.get("input_size") if isinstance(config, dict) else None
    if kind == "timm" and isinstance(size, list | tuple) and len(size) == 3:
        return int(size[0]), int(size[1]), int(size[2])
    return 3, 224, 224


def _load_torchscript(path: Path) -> Any:
    import torch

    if not path.is_file():
        raise UserError(f"{path} does not exist.")
    try:
        return torch.jit.load(str(path), map_location="cpu").eval()
    except Exception:  # not TorchScript, or a damaged archive (its code is not even UTF-8)
        pass
    try:  # not TorchScript: a checkpoint? Only plain tensors may load, never pickled code.
        loaded = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise UserError(
            f"{path.name} is neither TorchScript nor a plain checkpoint: loading it would run "
            f"pickled code, which DeployLens refuses ({_first_line(exc)}).",
            "Save the model with torch.jit.save or torch.export.save, or give FILE.py:factory.",
        ) from None
    kind = "state dict" if isinstance(loaded, dict) else type(loaded).__name__
    raise UserError(
        f"{path.name} holds a {kind} (weights only), not a model.",
        "Give the Python file that builds the model (FILE.py:factory) and load the weights there.",
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:160]


def vocabulary(module: Any) -> int | None:
    """The smallest embedding table of ``module`` (the ids an integer input may hold), if any."""
    import torch

    if module is None or not isinstance(module, torch.nn.Module):
        return None
    sizes = [m.num_embeddings for m in module.modules() if isinstance(m, torch.nn.Embedding)]
    return min(sizes) if sizes else None


def make_inputs(source: ModelSource, module: Any = None) -> tuple[Any, ...]:
    """Example inputs from ``--inputs FILE.npz`` or the ``--input`` specs: floats in [-1, 1],
    masks 0/1 and ids within the model's vocabulary unless a range is given."""
    import torch

    if source.inputs_npz:
        from deploylens.core.data.arrays import load_arrays

        data = load_arrays(source.inputs_npz)
        names = [i.name for i in source.inputs] or list(data)
        missing = [name for name in names if name not in data]
        if missing:
            raise UserError(
                f"{Path(source.inputs_npz).name} has no array for input '{missing[0]}'."
            )
        return tuple(torch.from_numpy(data[name]) for name in names)
    if not source.inputs:
        raise UserError(
            "This model source needs an input spec (--input name:1x3x224x224) "
            "or an .npz of example inputs."
        )
    generator = torch.Generator().manual_seed(source.seed)
    vocab = vocabulary(module)
    tensors = []
    for spec in source.inputs:
        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise UserError(f"Unknown dtype '{spec.dtype}' for input {spec.name}.")
        low, high = spec.value_range(vocab)
        if dtype.is_floating_point:
            value = torch.rand(spec.shape, generator=generator) * (high - low) + low
            tensors.append(value.to(dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, spec.shape, generator=generator).bool())
        else:
            tensors.append(
                torch.randint(int(low), int(high) + 1, spec.shape, generator=generator, dtype=dtype)
            )
    return tuple(tensors)
