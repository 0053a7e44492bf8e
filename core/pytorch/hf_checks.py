"""What an ``hf:DIR`` folder must be before transformers sees it, and what its load must show
after: every safetensors header read and checked here (its length, JSON, dtypes, shapes,
offsets inside the file, no two tensors on the same bytes), every size in the config a
positive integer within bounds, and the load's report (weights the checkpoint lacks, has in
excess or holds in another shape) judged — a backbone that would start from random values is
refused, naming how many weights and which; only a new task head may start random, and that
is said. A shared folder then ends in one sentence naming the file and the field, never a
``SafetensorError``, a ``ZeroDivisionError`` or transformers' "look at the above report"
with no report above."""

from __future__ import annotations

import itertools
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError

HEADER_LIMIT = 100_000_000  # safetensors' own bound on the JSON header
# safetensors dtype → bytes per element (the sub-byte FP4/FP6 kinds are not read here)
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}  # fmt: skip
MAX_RANK = 16

# Config fields that are sizes or counts: a positive integer each, within a bound no real model
# reaches (a 0 head count divides by zero in transformers, a negative size makes torch raise).
SIZE_BOUNDS = {
    "vocab_size": 2**24, "hidden_size": 2**17, "d_model": 2**17, "n_embd": 2**17,
    "intermediate_size": 2**19, "encoder_ffn_dim": 2**19, "decoder_ffn_dim": 2**19,
    "num_hidden_layers": 4096, "encoder_layers": 4096, "decoder_layers": 4096, "n_layer": 4096,
    "num_attention_heads": 4096, "encoder_attention_heads": 4096,
    "decoder_attention_heads": 4096, "n_head": 4096, "num_key_value_heads": 4096,
    "head_dim": 2**14, "max_position_embeddings": 2**24, "n_positions": 2**24,
    "type_vocab_size": 2**16, "image_size": 2**15, "patch_size": 2**12, "num_channels": 4096,
    "num_mel_bins": 4096, "max_source_positions": 2**20, "max_target_positions": 2**20,
    "num_labels": 2**20, "embedding_size": 2**17, "projection_dim": 2**17,
}  # fmt: skip
# (hidden, heads): a width the heads must divide
HEAD_SPLITS = (
    ("hidden_size", "num_attention_heads"),
    ("d_model", "encoder_attention_heads"),
    ("d_model", "decoder_attention_heads"),
    ("n_embd", "n_head"),
)
MAX_STAGES = 64  # a size given per stage or per layer: at most this many
NESTED = 8  # how deep sub-configs (text_config, vision_config, encoder, decoder) are followed


@dataclass(frozen=True)
class StoredTensor:
    """One tensor a safetensors header declares (its bytes are checked to lie in the file)."""

    name: str
    dtype: str
    shape: tuple[int, ...]


def read_header(file: Path) -> dict[str, StoredTensor]:
    """The tensors ``file`` declares, every header field checked against the file's size;
    or one sentence naming the file and what is wrong."""
    size = file.stat().st_size
    where = file.name
    if size < 8:
        raise UserError(
            f"{where} is not a safetensors file: {size} bytes, shorter than its header."
        )
    with file.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > HEADER_LIMIT:
            raise UserError(
                f"{where}: its header claims {length:,} bytes (safetensors allows at most "
                f"{HEADER_LIMIT:,}): not a safetensors file, or a damaged one."
            )
        if length > size - 8:
            raise UserError(
                f"{where} is truncated: its header claims {length:,} bytes, the file holds "
                f"{size - 8:,} after the length."
            )
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UserError(f"{where}: its header is not JSON ({type(exc).__name__}).") from None
    if not isinstance(header, dict):
        raise UserError(f"{where}: its header is not a JSON object.")
    data = size - 8 - length
    tensors = {}
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise UserError(f"{where}: __metadata__ is not a table of texts.")
            continue
        tensor, span = _entry(where, name, entry, data)
        tensors[name] = tensor
        spans.append((span, name))
    spans.sort()
    for (first, a), (second, b) in itertools.pairwise(spans):
        if second[0] < first[1]:
            raise UserError(f"{where}: tensors {a!r} and {b!r} claim the same bytes (overlapping).")
        if second[0] > first[1]:
            raise UserError(
                f"{where}: {second[0] - first[1]:,} bytes between tensors {a!r} and {b!r} belong "
                "to no tensor (safetensors covers its data whole): a damaged file."
            )
    covered = spans[-1][0][1] if spans else 0
    if (spans and spans[0][0][0] != 0) or covered != data:
        raise UserError(
            f"{where}: its tensors cover {covered - (spans[0][0][0] if spans else 0):,} of the "
            f"{data:,} bytes of data it holds (safetensors covers its data whole): a damaged file."
        )
    return tensors


def _entry(where: str, name: str, entry: Any, data: int) -> tuple[StoredTensor, tuple[int, int]]:
    """One header entry, checked: dtype known, shape of non-negative integers, offsets inside
    the data and exactly the bytes the shape needs."""
    if not isinstance(entry, dict):
        raise UserError(f"{where}: the entry of tensor {name!r} is not an object.")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise UserError(
            f"{where}: tensor {name!r} has dtype {str(dtype)[:40]!r}, which DeployLens does not "
            f"read (known: {', '.join(DTYPE_BYTES)})."
        )
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise UserError(
            f"{where}: tensor {name!r} has shape {str(shape)[:80]}, not a list of at most "
            f"{MAX_RANK} non-negative integers."
        )
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data
    ):
        raise UserError(
            f"{where}: tensor {name!r} has data_offsets {str(offsets)[:80]}, outside the "
            f"{data:,} bytes of data the file holds."
        )
    need = math.prod(shape) * DTYPE_BYTES[dtype]
    if offsets[1] - offsets[0] != need:
        raise UserError(
            f"{where}: tensor {name!r} ({dtype} {shape}) needs {need:,} bytes, its offsets "
            f"span {offsets[1] - offsets[0]:,}."
        )
    return StoredTensor(name, dtype, tuple(shape)), (offsets[0], offsets[1])


def check_config(config: dict[str, Any], where: str, depth: int = 0) -> None:
    """Every size the config gives (and its sub-configs') a positive integer within bounds,
    and every head count dividing its width; else one sentence naming the field."""
    if depth > NESTED:
        raise UserError(f"{where}: sub-configs nested more than {NESTED} deep.")
    for key, bound in SIZE_BOUNDS.items():
        value = config.get(key)
        if value is None:
            continue
        # a size per stage (SegFormer's num_attention_heads [1, 2]): each checked
        values = value if isinstance(value, list) and 0 < len(value) <= MAX_STAGES else [value]
        for item in values:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 < item <= bound:
                shown = repr(value) if isinstance(value, str) else str(value)
                raise UserError(
                    f"{where}: {key} is {shown[:40]}; it must be a whole number from 1 "
                    f"to {bound:,}."
                )
    for width, heads in HEAD_SPLITS:
        w, h = config.get(width), config.get(heads)
        if isinstance(w, int) and isinstance(h, int) and h > 0 and w % h:
            raise UserError(
                f"{where}: {width} {w} is not divisible by {heads} {h} (each head takes an "
                "equal share)."
            )
    for key, value in config.items():
        if isinstance(value, dict) and (key.endswith("_config") or key in ("encoder", "decoder")):
            check_config(value, f"{where} ({key})", depth + 1)


def judge_load(model: Any, info: dict[str, Any], folder: Path, total: int) -> list[str]:
    """transformers' load report (``output_loading_info``) judged: weights of the backbone
    missing from the checkpoint, in it beyond what the model has, or of another shape are
    refused (the network would not be the one saved); a new task head starting from random
    values is a note. Returns the notes to show beside the verdicts."""
    missing = sorted(str(k) for k in info.get("missing_keys") or ())
    unexpected = sorted(str(k) for k in info.get("unexpected_keys") or ())
    mismatched = [_mismatch(m) for m in info.get("mismatched_keys") or ()]
    name = folder.name
    if mismatched:
        raise UserError(
            f"hf:{name}: {len(mismatched)} weight(s) in its safetensors have another shape than "
            f"its config makes ({_first_names(mismatched)}): the config and the weights are not "
            "of one model.",
            "Save the model again with save_pretrained, or fix config.json to the weights' sizes.",
        )
    head = _in_head(model)
    backbone_missing = [k for k in missing if not head(k)]
    if backbone_missing:
        raise UserError(
            f"hf:{name}: its safetensors lack {len(backbone_missing)} of the {total} weights the "
            f"model needs ({_first_names(backbone_missing)}): they would start from random "
            "values, and every verdict would be about an untrained network, not the one saved.",
            "Save the whole model with save_pretrained(folder, safe_serialization=True).",
        )
    backbone_extra = [k for k in unexpected if not head(k)]
    if backbone_extra:
        raise UserError(
            f"hf:{name}: its safetensors hold {len(backbone_extra)} weight(s) the model its "
            f"config makes has no place for ({_first_names(backbone_extra)}): the config and "
            "the weights are not of one model.",
            "Save the model again with save_pretrained, or give the config it was trained with.",
        )
    notes = []
    if missing:
        notes.append(
            f"the task head ({_first_names(missing)}) is not in {name}'s weights: it starts "
            "from seeded random values (a head the checkpoint was never trained with)"
        )
    if unexpected:
        notes.append(
            f"{len(unexpected)} weight(s) of another head in {name}'s weights are not used "
            f"({_first_names(unexpected)})"
        )
    return notes


def _first_names(names: list[str], shown: int = 3) -> str:
    """The first weight names, and "…" where there are more."""
    return ", ".join(names[:shown]) + (" …" if len(names) > shown else "")


def _mismatch(item: Any) -> str:
    """A mismatched key as transformers reports it (the key, or (key, stored, wanted))."""
    if isinstance(item, tuple | list) and item:
        return str(item[0]) + (f" {tuple(item[1])} ≠ {tuple(item[2])}" if len(item) >= 3 else "")
    return str(item)


def _in_head(model: Any) -> Any:
    """Whether a weight name lies in a task head, not the backbone: outside the base model's
    prefix (``bert.``); for a bare model (the base model itself: a task checkpoint's head is
    what it leaves out), outside its own top-level modules."""
    prefix = str(getattr(model, "base_model_prefix", "") or "")
    if prefix and getattr(model, "base_model", model) is not model:
        return lambda key: not key.startswith(prefix + ".")
    own = {name for name, _ in model.named_children()}
    own |= {name for name, _ in model.named_parameters(recurse=False)}
    return lambda key: key.split(".", 1)[0] not in own
