"""Fuzz families for the surfaces issue 44 found unhardened: the files DeployLens writes and
reads back (capture sidecars, project files, the support registry and measured caches),
ExportedProgram archives with many members or lying headers, pathological Chrome traces (a few
MB each, with the bounds lowered so they take the same paths as GBs would), and optimization
profiles typed on the command line or in a settings file. Every base is built here."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.cases import SAMPLES, Case, _pick, kineto_trace
from tests.fuzz.mutate import WEIRD_NUMBERS, WEIRD_STRINGS, dumps, mutate_bytes, mutate_json

SPECIAL = ("NaN", "Infinity", "-Infinity", "1e308", "1e400", "-1e400", "9" * 40, "-0", "true",
           '"12"', "null", "[]", "{}")  # fmt: skip


def _token_edit(text: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """A number in the JSON replaced by a token Python's json writes or reads (NaN, 1e400 …)."""
    import re

    numbers = list(re.finditer(rb"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?", text))
    if not numbers:
        return text, "no number"
    match = numbers[int(rng.integers(0, len(numbers)))]
    token = _pick(rng, list(SPECIAL)).encode()
    return text[: match.start()] + token + text[match.end() :], f"number → {token.decode()}"


def _hostile_place(rng: np.random.Generator) -> tuple[str, Any]:
    """Something that is not a regular file where the file should be."""
    kind = _pick(rng, ["folder", "fifo", "dev-zero", "loop", "dangling"])

    def make(path: Path) -> None:
        import os

        if kind == "folder":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev-zero":
            path.symlink_to("/dev/zero")
        elif kind == "loop":
            path.symlink_to(path.with_name(path.name + ".2"))
            path.with_name(path.name + ".2").symlink_to(path)
        else:
            path.symlink_to(path.with_name("nowhere"))

    return kind, make


def _mutated_json_bytes(base: Any, rng: np.random.Generator) -> tuple[bytes, str]:
    choice = int(rng.integers(0, 10))
    text = dumps(base)
    if choice < 4:
        return dumps(mutate_json(base, rng, int(rng.integers(1, 4)))), "json"
    if choice < 6:
        return _token_edit(text, rng)
    if choice == 6:
        return mutate_bytes(text, rng), "bytes"
    if choice == 7:
        return _pick(rng, [b"", b"{}", b"null", b"[]", b"[" * 5000 + b"]" * 5000,
                           b"\xff\xfe\x00bad utf-8", text[: len(text) // 2]]), "edge"  # fmt: skip
    if choice == 8:
        return dumps(_pick(rng, [None, [], 0, "x", {"k": base}])), "type"
    return text, "unchanged"


# -- TRACE.capture.json --------------------------------------------------------------------------
SIDECAR = {"backend": "torch", "device": "cuda", "mode": "eager", "batch": 32, "streams": 1,
           "host": "pinned", "warmup": 5, "iterations": 20, "lab": "",
           "unprofiled_gpu_span_ms": 46.9}  # fmt: skip


def sidecar_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    trace = dumps(kineto_trace())
    for index in range(count):
        files: dict[str, Any] = {"trace.json": trace}
        if rng.random() < 0.1:
            kind, make = _hostile_place(rng)
            files["_place"] = lambda folder, make=make: make(folder / "trace.capture.json")
            what = kind
        else:
            data, what = _mutated_json_bytes(SIDECAR, rng)
            if rng.random() < 0.4:  # the key the diagnosis divides by, at its worst
                value = _pick(rng, [*SPECIAL, "0", "-46.9", "1e-320"])
                data = dumps(SIDECAR).replace(b"46.9", value.encode())
                what = f"span {value}"
            files["trace.capture.json"] = data
        yield Case("sidecar", f"sidecar-{index:04d}", files,
                   ["trace", "{dir}/trace.json", *_pick(rng, [[], ["--json"]])],
                   names=["trace.json", "trace.capture.json"], mutation=what)  # fmt: skip


# -- project files -------------------------------------------------------------------------------
PROJECT_LINES = (
    "[deploylens]\nschema = {schema}\n",
    '[model]\npath = "{path}"\n',
    '[validate.request]\nseed = {number}\n',
    '[build.request]\nversion = "{text}"\n',
    "[surgery]\nbase = {value}\n",
)  # fmt: skip


def project_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    model = (SAMPLES / "small_cnn.dynamo.onnx").read_bytes()
    for index in range(count):
        schema = _pick(rng, ["1", "2", "0", "-1", "3", "true", '"2"', "2.5", "1e9",
                             str(2**70), "[2]", "{}"])  # fmt: skip
        path = _pick(rng, ["model.onnx", "missing.onnx", "loop/x.onnx", "a\\u0000b",
                           "x" * 5000, "/etc/passwd", "../../etc/hostname", "", "dir",
                           "é中文.onnx", "model.onnx\\nrm -rf"])  # fmt: skip
        parts = [PROJECT_LINES[0].format(schema=schema)]
        if rng.random() < 0.8:
            parts.append(PROJECT_LINES[1].format(path=path))
        for line in PROJECT_LINES[2:]:
            if rng.random() < 0.4:
                number = _pick(rng, list(WEIRD_NUMBERS))
                text = _pick(rng, ["10.16", "rtx", "x", ""])
                value = _pick(rng, ["1", '"a"', "[1]", "true"])
                parts.append(line.format(number=number, text=text, value=value))
        text = "".join(parts).encode()
        what = f"schema {schema}, path {path[:20]!r}"
        if rng.random() < 0.15:
            text, what = mutate_bytes(text, rng), "bytes"

        def layout(folder: Path) -> None:
            (folder / "loop").symlink_to(folder / "loop2")
            (folder / "loop2").symlink_to(folder / "loop")
            (folder / "dir").mkdir()

        yield Case("project", f"project-{index:04d}",
                   {"model.onnx": model, "p.deploylens.toml": text, "_layout": layout},
                   call="project", args={"path": "p.deploylens.toml"},
                   names=["p.deploylens.toml"], mutation=what)  # fmt: skip


# -- the support registry cache ------------------------------------------------------------------
@cache
def registry_base() -> dict[str, Any]:
    """A small real registry cache (the installed onnx's spec; ORT and the exporters faked
    small): the schema is what is fuzzed, not the collection."""
    from deploylens.core.support.collect import version_set
    from deploylens.core.support.onnx_spec import load_spec

    spec = load_spec()
    spec["ops"] = [
        op
        for op in spec["ops"]
        if op["name"] in ("Relu", "Conv", "Add", "MaxPool", "Gemm", "ReduceMean", "Reshape")
    ]
    return {
        "versions": version_set(),
        "spec": spec,
        "ort": {"available": True, "version": "1.0", "providers": ["CPUExecutionProvider"],
                "kernels": [{"op": "Relu", "domain": "", "start": 6, "end": 13,
                             "provider": "CPUExecutionProvider", "types": {"T": ["float"]}}]},
        "torchscript": {"available": True, "torch": "2", "opsets": [17],
                        "ops": {"aten::relu": [9, 17]}},
        "dynamo": {"available": True, "torch": "2", "min_opset": 18, "opset": 18,
                   "ops": {"aten::relu": ["default"]}},
        "tensorrt_installed": None,
    }  # fmt: skip


def registry_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    base = registry_base()
    model = (SAMPLES / "small_cnn.dynamo.onnx").read_bytes()
    for index in range(count):
        files: dict[str, Any] = {"model.onnx": model}
        if rng.random() < 0.1:
            kind, make = _hostile_place(rng)
            files["_place"] = lambda folder, make=make: make(folder / "support.json")
            what = kind
        else:
            data, what = _mutated_json_bytes(base, rng)
            if rng.random() < 0.3:  # an opset of the wrong kind (NaN read as "opset 18")
                data = dumps(base).replace(b'"since": 1', b'"since": ' +
                                           _pick(rng, list(SPECIAL)).encode(), 1)  # fmt: skip
                what = "since token"
            files["support.json"] = data
        yield Case("registry", f"registry-{index:04d}", files, call="registry",
                   args={"path": "support.json", "model": "model.onnx"},
                   names=["support.json"], mutation=what)  # fmt: skip


# -- the measured cache --------------------------------------------------------------------------
@cache
def measured_base() -> dict[str, Any]:
    from deploylens.core.support.measure import version_set
    from deploylens.core.support.measured_types import (
        CellAnswer,
        LibraryAnswers,
        MeasuredMatrix,
    )

    cells = {"ai.onnx::Relu::14::float": CellAnswer("builds"),
             "ai.onnx::Conv::11::float": CellAnswer("builds"),
             "ai.onnx::MaxPool::12::float": CellAnswer("parse-fails", "no", "4")}  # fmt: skip
    matrix = MeasuredMatrix(
        LibraryAnswers(cells=dict(cells), product="TensorRT-RTX", version="1.7"),
        LibraryAnswers(cells={k: CellAnswer("runs") for k in cells}, version="1.32"),
        signatures={k: "in=0;out=1" for k in cells},
        versions=version_set(False),
    )
    data: dict[str, Any] = matrix.to_dict()
    return data


def measured_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    base = measured_base()
    for index in range(count):
        files: dict[str, Any] = {}
        if rng.random() < 0.1:
            kind, make = _hostile_place(rng)
            files["_place"] = lambda folder, make=make: make(folder / "measured.json")
            what = kind
        else:
            data, what = _mutated_json_bytes(base, rng)
            if rng.random() < 0.15:
                trimmed = {k: v for k, v in base.items() if k != _pick(rng, ["trt", "ort"])}
                data, what = dumps(trimmed), "a library's answers removed"
            files["measured.json"] = data
        yield Case("measured", f"measured-{index:04d}", files, call="measured",
                   args={"path": "measured.json"}, names=["measured.json"],
                   mutation=what)  # fmt: skip


# -- ExportedProgram archives --------------------------------------------------------------------
def _bomb(members: int, size: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        target.writestr("m/archive_format", b"pt2")
        for index in range(members):
            target.writestr(f"m/data/weights/w{index}", bytes(size))
    return out.getvalue()


def _under_declared(data: bytes, factor: int) -> bytes:
    """The archive with every member's declared (uncompressed) size divided by ``factor`` in
    both its local header and the central directory: it inflates past what it says."""
    raw = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.find(signature)
        while at >= 0:
            (size,) = struct.unpack_from("<I", raw, at + offset)
            struct.pack_into("<I", raw, at + offset, max(size // factor, 1))
            at = raw.find(signature, at + 4)
    return bytes(raw)


@cache
def archive_bases() -> dict[str, bytes]:
    return {
        "many-members": _bomb(100, 3 << 20),  # 300 MiB of zeros in ~0.3 MB
        "one-big": _bomb(1, 300 << 20),
        "small": _bomb(3, 1 << 10),
    }


def archive_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    bases = archive_bases()
    for index in range(count):
        base = _pick(rng, sorted(bases))
        data = bases[base]
        what = base
        choice = int(rng.integers(0, 4))
        if choice == 0:
            data, what = _under_declared(data, int(_pick(rng, [2, 16, 1000]))), f"{base} lying"
        elif choice == 1:
            data, what = mutate_bytes(data, rng), f"{base} bytes"
        yield Case("archives", f"archives-{index:04d}", {"source.pt2": data},
                   call="torch_source", args={"path": "source.pt2"}, names=["source.pt2"],
                   mutation=what)  # fmt: skip


# -- pathological Chrome traces ------------------------------------------------------------------
def trace_shapes() -> dict[str, Any]:
    from tests.helpers.hostile_traces import TRACES

    return TRACES


def pathological_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    """The six pathological families at 1-4 MB, with the event bound lowered to 1 MB and the
    parallel reader's threshold to 2 MB (``run_call``), so each takes the path a GB-size file
    takes."""
    shapes = trace_shapes()
    for index in range(count):
        name = _pick(rng, sorted(shapes))
        size = {"deep-array": int(rng.integers(500_000, 3_000_000)),
                "long-pid": int(rng.integers(100, 6000)),
                "bad-numbers": int(rng.integers(10_000, 600_000))}.get(
            name, int(rng.integers(200_000, 4 << 20)))  # fmt: skip
        gz = name == "gzip-spaces"
        file = "trace.json.gz" if gz else "trace.json"

        def make(folder: Path, name: str = name, size: int = size, file: str = file) -> None:
            shapes[name](folder / file, size)

        yield Case("traces", f"traces-{index:04d}", {"_trace": make},
                   call="small_bounds_trace", args={"path": file}, names=[file],
                   mutation=f"{name} {size:,}")  # fmt: skip


# -- optimization profiles -----------------------------------------------------------------------
DIMS = ("1", "0", "-1", "2147483647", "2147483648", str(2**63), "1e3", "x", "", "3.5", "08")


def _shape(rng: np.random.Generator) -> str:
    rank = int(rng.integers(0, 5))
    return "x".join(_pick(rng, list(DIMS)) if rng.random() < 0.4 else "1" for _ in range(rank))


def profile_cases(count: int, rng: np.random.Generator) -> Iterator[Case]:
    model = (SAMPLES / "small_cnn.dynamo.onnx").read_bytes()
    for index in range(count):
        files: dict[str, Any] = {"model.onnx": model}
        if rng.random() < 0.5:
            text = f"image:{_shape(rng)}/{_shape(rng)}/{_shape(rng)}"
            if rng.random() < 0.2:
                text = _pick(rng, ["", ":", "image", "image:1x3x32x32", "/", "a:b:c/d/e",
                                   *WEIRD_STRINGS])  # fmt: skip
            argv = ["build", "{dir}/model.onnx", "--profile", text, "--print-trtexec"]
            what = f"--profile {text[:40]!r}"
        else:
            triple = [[_pick(rng, [1, 0, -1, 2**31, 2**63, 3.5, "x", True])
                       for _ in range(int(rng.integers(0, 5)))] for _ in range(3)]  # fmt: skip
            text = "[[profiles]]\nimage = " + json.dumps(triple) + "\n"
            files["s.toml"] = text.encode()
            argv = ["build", "{dir}/model.onnx", "--settings", "{dir}/s.toml", "--print-trtexec"]
            what = f"[[profiles]] {json.dumps(triple)[:40]}"
        yield Case("profiles", f"profiles-{index:04d}", files,
                   argv + _pick(rng, [[], ["--script", "{dir}/b.py"], ["--json"]]),
                   names=["s.toml"] if "s.toml" in files else ["profile"],
                   mutation=what)  # fmt: skip
