"""``hf:DIR``: a local Hugging Face model folder (``config.json`` + ``*.safetensors``, as
``save_pretrained`` writes it), exported the way Optimum's exporter does — the task from the
config or ``--task``, example inputs from the config, batch and sequence axes dynamic.

What a shared folder can make us do is bounded: the config is read with a size limit and checked
before transformers sees it; weights load only from safetensors files inside the folder (never
pickled ``.bin`` files, never a shard name that leaves the folder); a config that asks for its own
code (``auto_map``) is refused — DeployLens never passes ``trust_remote_code``.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import input_file, read_json
from deploylens.core.pytorch.hf_checks import check_config, judge_load, read_header

INSTALL = "pip install 'transformers>=4.40' safetensors"
CONFIG_LIMIT = 4 * 2**20
SEQUENCE = 16  # example tokens: within every tiny config's positions, long enough to mean a text

# Optimum's task names → the transformers auto class that builds a model for it.
TASKS: dict[str, str] = {
    "feature-extraction": "AutoModel",
    "fill-mask": "AutoModelForMaskedLM",
    "text-generation": "AutoModelForCausalLM",
    "text-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "question-answering": "AutoModelForQuestionAnswering",
    "multiple-choice": "AutoModelForMultipleChoice",
    "image-classification": "AutoModelForImageClassification",
    "object-detection": "AutoModelForObjectDetection",
    "semantic-segmentation": "AutoModelForSemanticSegmentation",
    "audio-classification": "AutoModelForAudioClassification",
    "automatic-speech-recognition": "AutoModelForCTC",
}
# An architecture's class-name suffix → its task (``BertForMaskedLM`` → fill-mask).
SUFFIX_TASKS = (
    ("ForMaskedLM", "fill-mask"),
    ("ForCausalLM", "text-generation"),
    ("LMHeadModel", "text-generation"),
    ("ForSequenceClassification", "text-classification"),
    ("ForTokenClassification", "token-classification"),
    ("ForQuestionAnswering", "question-answering"),
    ("ForMultipleChoice", "multiple-choice"),
    ("ForImageClassification", "image-classification"),
    ("ForObjectDetection", "object-detection"),
    ("ForSemanticSegmentation", "semantic-segmentation"),
    ("ForAudioClassification", "audio-classification"),
    ("ForCTC", "automatic-speech-recognition"),
)
ARCHITECTURE = re.compile(r"^[A-Z][A-Za-z0-9]*$")


@dataclass
class HFFolder:
    """What a folder holds, checked: its config and the safetensors files its weights are in."""

    path: Path
    config: dict[str, Any]
    weights: list[Path]
    architecture: str  # the class the config names ("" when it names none)
    task: str


def read_folder(folder: str | Path, task: str = "") -> HFFolder:
    """The folder's config and weights, or one sentence saying what is wrong with it."""
    path = Path(folder)
    if not path.is_dir():
        raise UserError(f"hf:{folder}: not a folder (give the folder save_pretrained wrote).")
    config_file = path / "config.json"
    if not config_file.exists():
        raise UserError(f"{path} has no config.json: not a Hugging Face model folder.")
    _inside(config_file, path)
    config = read_json(config_file, "Hugging Face config", limit=CONFIG_LIMIT)
    if not isinstance(config, dict):
        raise UserError(f"{config_file} is not a Hugging Face config (not a JSON object).")
    if "auto_map" in config:
        raise UserError(
            f"{path.name}'s config maps its classes to its own code (auto_map): DeployLens never "
            "runs a model folder's code (trust_remote_code).",
            "Export it with the code in your own environment (FILE.py:factory, after reading it).",
        )
    check_config(config, f"{path.name}/config.json")
    weights = _weights(path)
    for file in weights:
        read_header(file)  # every header checked before safetensors or transformers reads it
    architectures = config.get("architectures") or []
    architecture = architectures[0] if isinstance(architectures, list) and architectures else ""
    if not isinstance(architecture, str) or (architecture and not ARCHITECTURE.match(architecture)):
        raise UserError(f"{config_file.name}: 'architectures' names no class ({architecture!r}).")
    chosen = task or task_of(architecture)
    if chosen not in TASKS:
        raise UserError(
            f"Unknown task '{chosen}'; choose one of {', '.join(TASKS)}."
            if task
            else f"{path.name}'s config names no architecture DeployLens knows a task for "
            f"({architecture or 'none'}): give --task ({', '.join(TASKS)})."
        )
    return HFFolder(path, config, weights, architecture, chosen)


def task_of(architecture: str) -> str:
    """Optimum's task for an architecture class name; a bare model is feature extraction."""
    for suffix, task in SUFFIX_TASKS:
        if architecture.endswith(suffix):
            return task
    return "feature-extraction" if architecture.endswith(("Model", "Encoder")) else ""


def _inside(file: Path, folder: Path) -> None:
    if not file.resolve().is_relative_to(folder.resolve()):
        raise UserError(f"{file.name} points outside {folder} (a symbolic link): refused.")
    input_file(file, "model file")


def _weights(folder: Path) -> list[Path]:
    """The safetensors files the model loads, each a regular file inside the folder."""
    index_file = folder / "model.safetensors.index.json"
    if index_file.exists():
        _inside(index_file, folder)
        index = read_json(index_file, "safetensors index", limit=64 * 2**20)
        names = index.get("weight_map", {}) if isinstance(index, dict) else None
        if not isinstance(names, dict) or not names:
            raise UserError(f"{index_file.name} holds no weight_map.")
        files = sorted({str(v) for v in names.values()})
        bad = [n for n in files if "/" in n or "\\" in n or n.startswith(".") or not n]
        if bad:
            raise UserError(f"{index_file.name} names a shard outside the folder ({bad[0]!r}).")
        found = [folder / name for name in files]
    else:
        found = sorted(folder.glob("*.safetensors"))
    if not found:
        pickled = sorted(p.name for p in folder.glob("*.bin")) + sorted(
            p.name for p in folder.glob("*.pt*")
        )
        if pickled:
            raise UserError(
                f"{folder.name} holds its weights as pickles ({pickled[0]}): loading them could "
                "run code, which DeployLens refuses.",
                "Save the model with save_pretrained(folder, safe_serialization=True) "
                "(safetensors) and open that folder.",
            )
        raise UserError(f"{folder.name} holds no weights (*.safetensors).")
    for file in found:
        if not file.exists():
            raise UserError(f"{folder.name}: the weights file {file.name} is missing.")
        _inside(file, folder)
    return found


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise UserError("hf:DIR needs transformers in the worker's environment.", INSTALL) from None
    return transformers


def _model_class(transformers: Any, found: HFFolder) -> Any:
    """The config's own class where it serves the task (transformers' namespace only, never a
    name from the folder's code), else the task's auto class."""
    named = getattr(transformers, found.architecture, None) if found.architecture else None
    if (
        named is not None
        and inspect.isclass(named)
        and issubclass(named, transformers.PreTrainedModel)
        and task_of(found.architecture) == found.task
    ):
        return named
    return getattr(transformers, TASKS[found.task])


def load_hf(folder: str, task: str = "", seed: int = 0) -> tuple[Any, tuple[Any, ...], list[str]]:
    """(module in eval mode, example inputs, input names) for ``hf:DIR``: the model is wrapped so
    it takes its inputs by position in the order named, and returns its ``ModelOutput``."""
    import torch

    found = read_folder(folder, task)
    transformers = _transformers()
    cls = _model_class(transformers, found)
    torch.manual_seed(seed)  # heads a task adds to a bare model start from seeded random weights
    try:  # its load report is judged below (judge_load), never left to its log
        model, info = cls.from_pretrained(
            str(found.path),
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=True,
            dtype=torch.float32,
            output_loading_info=True,
            ignore_mismatched_sizes=True,
        )
    except UserError:
        raise
    except Exception as exc:  # a third-party loader's exception: one sentence naming the folder
        named = found.architecture or cls.__name__
        raise UserError(
            f"transformers could not load hf:{found.path.name} ({named}): "
            f"{type(exc).__name__}: {_first(exc)}"
        ) from None
    total = len(model.state_dict())
    notes = judge_load(model, info, found.path, total)
    model.eval()
    config = model.config
    if hasattr(config, "use_cache"):
        config.use_cache = False  # no past key values: one graph, inputs → outputs
    inputs = example_inputs(model, found)
    wrapped = wrap(model, list(inputs), found.task)
    wrapped.load_notes = notes  # what the verdicts say beside themselves (a random task head)
    return wrapped, tuple(inputs.values()), list(inputs)


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _size(config: Any, folder: Path) -> tuple[int, int]:
    """The image size the model expects: its config's, else its processor's, else 224."""
    size = getattr(config, "image_size", None)
    if isinstance(size, int) and size > 0:
        return size, size
    if isinstance(size, list | tuple) and len(size) == 2:
        return int(size[0]), int(size[1])
    processor = folder / "preprocessor_config.json"
    if processor.is_file():
        try:
            data = read_json(processor, "preprocessor config", limit=CONFIG_LIMIT)
            given = data.get("size") if isinstance(data, dict) else None
            if isinstance(given, dict):
                h = given.get("height") or given.get("shortest_edge")
                w = given.get("width") or h
                if isinstance(h, int) and isinstance(w, int) and 0 < h <= 4096 and 0 < w <= 4096:
                    return h, w
        except UserError:
            pass
    return 224, 224


def example_inputs(model: Any, found: HFFolder) -> dict[str, Any]:
    """Inputs a model of this config accepts, as Optimum makes them: token ids within the
    vocabulary, masks of ones, pixel values in the processor's size, a second of audio."""
    import torch

    config = model.config
    accepted = set(inspect.signature(model.forward).parameters)
    generator = torch.Generator().manual_seed(0)
    main = getattr(model, "main_input_name", "input_ids")
    inputs: dict[str, Any] = {}
    if main == "input_ids":
        positions = getattr(config, "max_position_embeddings", None) or SEQUENCE
        length = max(2, min(SEQUENCE, int(positions)))
        vocab = int(getattr(config, "vocab_size", 0) or 100)
        inputs["input_ids"] = torch.randint(0, vocab, (1, length), generator=generator)
        if "attention_mask" in accepted:
            inputs["attention_mask"] = torch.ones(1, length, dtype=torch.int64)
        if "token_type_ids" in accepted and getattr(config, "type_vocab_size", None):
            inputs["token_type_ids"] = torch.zeros(1, length, dtype=torch.int64)
    elif main == "pixel_values":
        h, w = _size(config, found.path)
        channels = int(getattr(config, "num_channels", 3) or 3)
        inputs["pixel_values"] = torch.rand(1, channels, h, w, generator=generator) * 2 - 1
    elif main == "input_values":
        inputs["input_values"] = torch.rand(1, 16000, generator=generator) * 2 - 1
    elif main == "input_features":
        bins = int(getattr(config, "num_mel_bins", 80))
        frames = 2 * int(getattr(config, "max_source_positions", 1500))
        inputs["input_features"] = torch.rand(1, bins, frames, generator=generator) * 2 - 1
    else:
        raise UserError(
            f"{found.path.name}: DeployLens cannot make example inputs for a model whose main "
            f"input is '{main}'.",
            "Give them as an .npz (--inputs) with one array per input name.",
        )
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in accepted:
        start = getattr(config, "decoder_start_token_id", None) or 0
        inputs["decoder_input_ids"] = torch.full((1, 4), int(start), dtype=torch.int64)
    return inputs


# Optimum's names for the dynamic axes of each input it makes (its ``inputs`` properties):
# an encoder-decoder's decoder tokens have their own length, never the encoder's.
SEQUENCE_AXES = {
    "input_ids": "sequence_length",
    "attention_mask": "sequence_length",
    "token_type_ids": "sequence_length",
    "decoder_input_ids": "decoder_sequence_length",
    "decoder_attention_mask": "decoder_sequence_length",
}


def dynamic_axes(names: list[str]) -> dict[str, dict[int, str]]:
    """Optimum's dynamic axes: ``batch_size`` everywhere, each token input's own sequence
    axis (one shared name would make ONNX Runtime refuse any run where an encoder-decoder's
    two lengths differ, the export's own inputs included)."""
    axes: dict[str, dict[int, str]] = {}
    for name in names:
        axes[name] = {0: "batch_size"}
        if name in SEQUENCE_AXES:
            axes[name][1] = SEQUENCE_AXES[name]
    return axes


_WRAPPER: list[Any] = []


def wrap(model: Any, names: list[str], task: str) -> Any:
    """``model`` as a module taking its inputs by position (the class is made at first use:
    this module imports without torch)."""
    if not _WRAPPER:
        _WRAPPER.append(_wrapper_class())
    return _WRAPPER[0](model, names, task).eval()


def _wrapper_class() -> Any:
    import torch

    class HFModule(torch.nn.Module):  # type: ignore[misc]  # torch is Any to mypy
        """A transformers model taking its inputs by position, in the order ``names`` says,
        and returning its ``ModelOutput`` (a dict: what the comparisons flatten by key)."""

        def __init__(self, model: Any, names: list[str], task: str) -> None:
            super().__init__()
            self.model = model
            self.input_names = list(names)
            self.task = task

        def forward(self, *args: Any, **named: Any) -> Any:
            given = dict(zip(self.input_names, args, strict=False))
            return self.model(**given, **named, return_dict=True)

    return HFModule
