"""Where a PyTorch model comes from, and how the worker loads it safely.

Specs: ``sample:asinh`` (bundled), ``torchvision:resnet18`` (weights=None), ``file.py:factory``
(user code: runs only with consent, remembered per file hash), ``model.pt`` (TorchScript),
``model.pt2`` (ExportedProgram). Checkpoints load with ``weights_only=True``.
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
    low: float = -1.0
    high: float = 1.0


@dataclass
class ModelSource:
    kind: str  # sample | torchvision | python | torchscript | exported_program
    target: str  # sample name, torchvision name, file path
    factory: str = ""  # for python files
    inputs: list[InputSpec] = field(default_factory=list)
    inputs_npz: str = ""
    seed: int = 0

    def spec(self) -> str:
        if self.kind == "python":
            return f"{self.target}:{self.factory}"
        if self.kind in ("sample", "torchvision"):
            return f"{self.kind}:{self.target}"
        return self.target

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSource:
        return cls(**{**data, "inputs": [InputSpec(**i) for i in data.get("inputs", [])]})


def parse_spec(spec: str) -> ModelSource:
    if spec.startswith(("sample:", "torchvision:")):
        kind, _, name = spec.partition(":")
        return ModelSource(kind, name)
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
        f"'{spec}' is not a model source: use sample:NAME, torchvision:NAME, "
        "FILE.py:factory, MODEL.pt (TorchScript) or MODEL.pt2 (ExportedProgram)."
    )


def parse_input(text: str) -> InputSpec:
    """``name:1x3x224x224[:float32[:low:high]]``."""
    parts = text.split(":")
    if len(parts) < 2:
        raise UserError(f"Input '{text}': use name:1x3x224x224[:dtype[:low:high]].")
    try:
        shape = [int(d) for d in parts[1].lower().split("x")]
        spec = InputSpec(parts[0], shape, parts[2] if len(parts) > 2 else "float32")
        if len(parts) > 4:
            spec.low, spec.high = float(parts[3]), float(parts[4])
    except ValueError:
        raise UserError(f"Input '{text}': the shape must be integers like 1x3x224x224.") from None
    return spec


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


def load_model(source: ModelSource) -> tuple[Any, tuple[Any, ...], list[str]]:
    """(module in eval mode, example inputs, input names)."""
    import torch

    names = [i.name for i in source.inputs]
    if source.kind == "sample":
        models = samples_module()
        if source.target not in models.SAMPLES:
            raise UserError(
                f"No bundled sample '{source.target}'; choose from {', '.join(models.SAMPLES)}."
            )
        module, inputs = models.build(source.target)
        return module, inputs, names or list(models.SAMPLES[source.target][2])
    if source.kind == "torchvision":
        import torchvision

        known = set(torchvision.models.list_models())
        if source.target not in known:
            close = sorted(n for n in known if source.target.lower()[:4] in n)[:6]
            raise UserError(
                f"torchvision {torchvision.__version__} has no model '{source.target}'"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + "; `torchvision.models.list_models()` lists them."
            )
        builder = torchvision.models.get_model_builder(source.target)
        torch.manual_seed(source.seed)  # weights=None: random init, reproducible per seed
        module = builder(weights=None).eval()
        inputs = make_inputs(source) if source.inputs else (torch.randn(1, 3, 224, 224),)
        return module, inputs, names or ["input"]
    if source.kind == "python":
        torch.manual_seed(source.seed)
        result = _load_python(source)
        module, inputs = result if isinstance(result, tuple) else (result, None)
        return module.eval(), inputs or make_inputs(source), names or ["input"]
    if source.kind == "torchscript":
        module = _load_torchscript(Path(source.target))
        return module, make_inputs(source), names or ["input"]
    if source.kind == "exported_program":
        from deploylens.core.pytorch.pt2_archive import load_exported_program

        program = load_exported_program(source.target)
        return program.module(), make_inputs(source), names or ["input"]
    raise UserError(f"Unknown model source kind '{source.kind}'.")


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


def make_inputs(source: ModelSource) -> tuple[Any, ...]:
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
    tensors = []
    for spec in source.inputs:
        dtype = getattr(torch, spec.dtype, None)
        if dtype is None:
            raise UserError(f"Unknown dtype '{spec.dtype}' for input {spec.name}.")
        if dtype.is_floating_point:
            value = torch.rand(spec.shape, generator=generator) * (spec.high - spec.low) + spec.low
            tensors.append(value.to(dtype))
        else:
            tensors.append(
                torch.randint(
                    int(spec.low), int(spec.high) + 1, spec.shape, generator=generator, dtype=dtype
                )
            )
    return tuple(tensors)
