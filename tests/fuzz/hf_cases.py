"""Fuzz families for the surfaces issue 63 found unhardened: ``hf:DIR`` folders (safetensors
headers, config sizes, weights that do not fit the config, pickles and links where weights
belong), ``--input NAME:SHAPE:DTYPE:LOW:HIGH`` specs, and whatever a user or a crash leaves in
place of the support cache. Every base is built here: a tiny BERT written by
``save_pretrained`` (random weights), specs from the dtypes' edges."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.cases import SAMPLES, Case, _pick
from tests.fuzz.mutate import WEIRD_NUMBERS, dumps, mutate_bytes, mutate_json, weird_value

FOLDER = "hfmodel"
NAMES = [FOLDER, "model.safetensors", "config.json", "model.safetensors.index.json"]


@cache
def bert_folder() -> dict[str, bytes]:
    """config.json and model.safetensors of a tiny random BERT, as save_pretrained writes them."""
    import tempfile

    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=32)  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        transformers.BertModel(config).save_pretrained(scratch)
        return {name: (Path(scratch) / name).read_bytes() for name in
                ("config.json", "model.safetensors")}  # fmt: skip


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def _join(header: Any, body: bytes, length: int | None = None) -> bytes:
    raw = dumps(header)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + body


def _header_mutation(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    header, body = _split(data)
    names = [k for k in header if k != "__metadata__"]
    name = _pick(rng, names)
    entry = header[name]
    kind = _pick(rng, ["huge shape", "offsets past", "overlap", "length 2^63", "length 100MB",
                       "truncated", "empty", "dtype", "negative dim", "entry", "metadata",
                       "json edit", "bytes", "drop body", "rank"])  # fmt: skip
    if kind == "huge shape":
        entry["shape"] = [2**40, 2**40]
    elif kind == "offsets past":
        entry["data_offsets"] = [entry["data_offsets"][0], len(body) + 4096]
    elif kind == "overlap" and len(names) > 1:
        other = header[_pick(rng, [n for n in names if n != name])]
        entry["data_offsets"] = list(other["data_offsets"])
    elif kind == "length 2^63":
        return _join(header, body, 2**63), kind
    elif kind == "length 100MB":
        return _join(header, body, 100_000_001), kind
    elif kind == "truncated":
        return data[: int(rng.integers(0, len(data)))], kind
    elif kind == "empty":
        return b"", kind
    elif kind == "dtype":
        entry["dtype"] = _pick(rng, ["Q7", "F4", "", "float32", 3])
    elif kind == "negative dim":
        entry["shape"] = [-1, *entry["shape"][1:]]
    elif kind == "entry":
        header[name] = weird_value(rng)
    elif kind == "metadata":
        header["__metadata__"] = weird_value(rng)
    elif kind == "json edit":
        header = mutate_json(header, rng, int(rng.integers(1, 4)))
    elif kind == "bytes":
        return mutate_bytes(data, rng), kind
    elif kind == "drop body":
        body = body[: len(body) // 2]
    elif kind == "rank":
        entry["shape"] = [1] * 40
    return _join(header, body), f"safetensors: {kind} ({name})"


SIZE_KEYS = ("num_attention_heads", "hidden_size", "vocab_size", "num_hidden_layers",
             "intermediate_size", "max_position_embeddings", "type_vocab_size")  # fmt: skip


def _config_mutation(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    config = json.loads(data)
    kind = _pick(rng, ["size", "size", "json edit", "architectures", "auto_map", "not object",
                       "not json", "model_type", "nested", "indivisible"])  # fmt: skip
    if kind == "size":
        key = _pick(rng, list(SIZE_KEYS))
        config[key] = _pick(rng, [*WEIRD_NUMBERS, "2", True, None, [], 0])
        kind = f"{key} = {str(config[key])[:20]}"
    elif kind == "json edit":
        config = mutate_json(config, rng, int(rng.integers(1, 4)))
    elif kind == "architectures":
        config["architectures"] = _pick(rng, [["os.system"], ["../../x"], [3], "BertModel", []])
    elif kind == "auto_map":
        config["auto_map"] = {"AutoModel": "evil.Model"}
    elif kind == "not object":
        return dumps([1, 2]), kind
    elif kind == "not json":
        return data[: len(data) // 2], kind
    elif kind == "model_type":
        config["model_type"] = _pick(rng, ["nonexistent", "", 7, "../bert"])
    elif kind == "nested":
        config["text_config"] = {"hidden_size": 0}
    elif kind == "indivisible":
        config["num_attention_heads"] = 3
    return dumps(config), f"config: {kind}"


def _weights_mutation(files: dict[str, Any], rng: np.random.Generator) -> str:
    """Weights that do not fit the config, or are not where (or what) they should be."""
    from safetensors.numpy import load, save

    tensors = load(files["model.safetensors"])
    names = sorted(tensors)
    kind = _pick(rng, ["drop some", "drop all", "extra", "reshape", "pickle", "index out",
                       "link out", "index shard missing"])  # fmt: skip
    if kind == "drop some":
        gone = set(names[: int(rng.integers(1, len(names)))])
        files["model.safetensors"] = save({k: v for k, v in tensors.items() if k not in gone})
    elif kind == "drop all":
        files["model.safetensors"] = save({})
    elif kind == "extra":
        files["model.safetensors"] = save({**tensors, "encoder.layer.7.x.weight": np.ones(3,
                                           np.float32)})  # fmt: skip
    elif kind == "reshape":
        name = _pick(rng, names)
        tensors[name] = np.zeros([3, *tensors[name].shape[1:]], tensors[name].dtype)
        files["model.safetensors"] = save(tensors)
    elif kind == "pickle":
        del files["model.safetensors"]
        files["pytorch_model.bin"] = b"\x80\x04cos\nsystem\n."
    elif kind == "index out":
        outside = ["../x.safetensors", "/etc/passwd", ".hidden"]
        files["model.safetensors.index.json"] = dumps(
            {"weight_map": {n: _pick(rng, outside) for n in names}}
        )
    elif kind == "link out":
        del files["model.safetensors"]

        def link(folder: Path) -> None:
            (folder.parent / "secret.bin").write_bytes(b"SECRET" * 100)
            (folder / "model.safetensors").symlink_to(folder.parent / "secret.bin")

        files["_link"] = link
    elif kind == "index shard missing":
        files["model.safetensors.index.json"] = dumps(
            {"weight_map": {n: "model-00002-of-00002.safetensors" for n in names}}
        )
    return f"weights: {kind}"


def hf_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    """88 by default: the folder's header, config and weights mutated, loaded as ``hf:DIR`` is
    (the folder read and checked, transformers' load, its report judged, example inputs)."""
    base = bert_folder()
    for index in range(count):
        files: dict[str, Any] = dict(base)
        which = index % 3
        if which == 0:
            files["model.safetensors"], mutation = _header_mutation(base["model.safetensors"], rng)
        elif which == 1:
            files["config.json"], mutation = _config_mutation(base["config.json"], rng)
        else:
            mutation = _weights_mutation(files, rng)
        inner = {f"{FOLDER}/{name}": content for name, content in files.items() if
                 not callable(content)}  # fmt: skip

        def layout(folder: Path, inner: dict[str, Any] = inner, files: dict[str, Any] = files):
            (folder / FOLDER).mkdir()
            for name, content in inner.items():
                (folder / name).write_bytes(content)
            for content in files.values():
                if callable(content):
                    content(folder / FOLDER)

        yield Case("hf", f"hf-{index:04d}", {"_layout": layout}, call="hf_load",
                   args={"folder": FOLDER}, names=NAMES, mutation=mutation,
                   secret=b"SECRET")  # fmt: skip


DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool", "float16", "bfloat16", "float32")
EDGES = ("-1e30", "1e30", "0.5", "0.7", "-129", "128", "256", "-1", "0", "1", "65505",
         "3.5e38", "nan", "inf", "-inf", "1e999", "9" * 30, "x", "", "2")  # fmt: skip


def spec_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    """``export FILE.py:make --input x:SHAPE:DTYPE:LOW:HIGH`` with ranges from every dtype's
    edges: refused where typed, or drawn within the dtype (the model behind is never reached
    with a wrapped or empty range)."""
    for index in range(count):
        dtype = _pick(rng, list(DTYPES))
        low, high = _pick(rng, list(EDGES)), _pick(rng, list(EDGES))
        spec = f"x:1x4:{dtype}:{low}:{high}"
        yield Case("specs", f"specs-{index:04d}", call="input_spec", args={"spec": spec},
                   names=[spec], mutation=spec)  # fmt: skip


def cache_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    """``support`` with a FIFO, a /dev/zero link, a folder, a loop, a dangling link or garbage
    in place of its registry cache: it answers (the cache rewritten), never a temp path."""
    from tests.fuzz.own_cases import _hostile_place

    for index in range(count):
        kind, make = _hostile_place(rng)
        garbage = mutate_bytes(b'{"schema": 3}', rng) if index % 6 == 5 else b""

        def layout(folder: Path, make: Any = make, garbage: bytes = garbage) -> None:
            import os

            from deploylens.core.support.collect import cache_path

            os.environ["DEPLOYLENS_CACHE_DIR"] = str(folder / "cache")
            place = cache_path()
            place.parent.mkdir(parents=True, exist_ok=True)
            if garbage:
                place.write_bytes(garbage)
            else:
                make(place)

        yield Case("cache", f"cache-{index:04d}", {"_layout": layout},
                   ["support", str(SAMPLES / "small_cnn.dynamo.onnx"), "--target", "ort-cpu"],
                   names=["small_cnn.dynamo.onnx"],
                   mutation="garbage" if garbage else kind)  # fmt: skip
