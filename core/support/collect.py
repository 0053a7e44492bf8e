"""Collect every support registry in the worker's interpreter, cached on disk per version set."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

import platformdirs

from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, write_cache_file
from deploylens.core.own_files import Either, Optional, Range, Table, read_own_json
from deploylens.core.support.result import RegistryCache

SUPPORT_SCHEMA = 3  # bump when the collected data changes shape


def cache_dir() -> Path:
    override = os.environ.get("DEPLOYLENS_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("deploylens"))


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def version_set() -> dict[str, str]:
    """What the registries depend on; read from metadata, so no heavy import is needed."""
    return {
        "schema": str(SUPPORT_SCHEMA),
        "onnx": _version("onnx"),
        "torch": _version("torch"),
        "torchvision": _version("torchvision"),
        "onnxruntime": _version("onnxruntime")
        if _version("onnxruntime") != "-"
        else _version("onnxruntime-gpu"),
    }


def cache_path(versions: dict[str, str] | None = None) -> Path:
    versions = versions or version_set()
    digest = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"support-{digest}.json"


def collect(progress: Any = None) -> dict[str, Any]:
    from deploylens.core.support.onnx_spec import load_spec
    from deploylens.core.support.ort_kernels import ort_kernels
    from deploylens.core.support.torch_exporters import dynamo_translations, torchscript_symbolics

    step = progress or (lambda fraction, text: None)
    step(0.05, "ONNX spec history")
    spec = load_spec()
    step(0.15, "ONNX Runtime kernels")
    ort = ort_kernels()
    step(0.25, "TorchScript exporter symbolics (imports torch)")
    torchscript = torchscript_symbolics()
    step(0.6, "dynamo exporter translations (torchlib)")
    dynamo = dynamo_translations()
    return {
        "versions": version_set(),
        "spec": spec,
        "ort": ort,
        "torchscript": torchscript,
        "dynamo": dynamo,
        "tensorrt_installed": _version("tensorrt") if _version("tensorrt") != "-" else None,
    }


# The cache file's shape, checked on every read back (core/own_files.py): a cache someone
# truncated, replaced or edited is collected again, never read into a wrong verdict.
OPSET = Range(1, 1000)
_VERSION = {
    "since": OPSET, "deprecated": bool, "summary": str, "inputs": [[str]], "outputs": [[str]],
    "attributes": [str], "type_constraints": Table(str, [str]), "has_function": bool,
    "function_ops": [[str]],
}  # fmt: skip
REGISTRY_SCHEMA = {
    "versions": Table(str, str),
    "spec": {
        "onnx_version": str,
        "max_opset": Table(str, OPSET),
        "ops": [{"domain": str, "name": str, "versions": [_VERSION]}],
    },
    # a backend this interpreter lacks is {"available": false, "reason": ...}: every other key
    # is optional (the bundle without torch wrote a cache its own reader then refused)
    "ort": {
        "available": bool, "reason": Optional(str), "version": Optional(str),
        "providers": Optional([str]),
        "kernels": Optional([{"op": str, "domain": str, "start": OPSET,
                              "end": Either(None, Range(1, 2**31)), "provider": str,
                              "types": Table(str, [str])}]),
    },
    "torchscript": {"available": bool, "reason": Optional(str), "torch": Optional(str),
                    "opsets": Optional([OPSET]), "ops": Optional(Table(str, [OPSET]))},
    "dynamo": {"available": bool, "reason": Optional(str), "torch": Optional(str),
               "min_opset": Optional(OPSET), "opset": Optional(OPSET),
               "ops": Optional(Table(str, [str]))},
    "tensorrt_installed": Either(None, str),
}  # fmt: skip
CACHE_LIMIT = 64 << 20


def read_registries(path: str | Path) -> dict[str, Any]:
    """A registry cache file, guarded and checked (``UserError`` when it is not one)."""
    data: dict[str, Any] = read_own_json(path, "support registry cache", CACHE_LIMIT,
                                         REGISTRY_SCHEMA)  # fmt: skip
    return data


def _usable(path: Path) -> bool:
    try:
        read_registries(path)
    except UserError:
        return False
    return True


def support_job(ctx: Any, params: dict[str, Any]) -> RegistryCache:
    """Return the cache file of this interpreter's registries, building it when missing or
    when the file there does not read back (truncated, edited, not a file): written over
    whatever holds its place (``write_cache_file``)."""
    from deploylens.core.support.request import CollectRequest

    request = CollectRequest.from_params(params)
    path = cache_path()
    cached = not request.refresh and _usable(path)
    if not cached:
        data = collect(ctx.progress)
        ctx.progress(0.95, "writing the cache")
        write_cache_file(path, json.dumps(data))  # over whatever is not a regular file there
    if request.copy_to:  # a remote worker: the file that is fetched back
        atomic_write_text(Path(request.copy_to), path.read_text())
        path = Path(request.copy_to)
    return RegistryCache(str(path), cached)
