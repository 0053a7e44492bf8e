"""TensorRT engine layers from ``trtexec --exportLayerInfo`` / ``IEngineInspector`` JSON.

Works without TensorRT. Three shapes exist in the wild: the detailed form (a ``Layers`` list of
objects with inputs, outputs, formats and tactics, plus ``Bindings``), the names-only form
(``ProfilingVerbosity.LAYER_NAMES_ONLY``: ``Layers`` is a list of strings) and single-layer
objects. The ONNX nodes a layer implements come from ``Metadata`` (``[ONNX Layer: name]``, since
TensorRT 8.6/10) or, failing that, from the layer name: TensorRT joins fused node names with
`` + `` and wraps pointwise fusions in ``PWN(...)``; Myelin regions are ``{ForeignNode[a...b]}``
and only name their first and last node, so they are listed as regions, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.files import read_json

_META_NODE = re.compile(r"\[ONNX Layer: ([^\]]*)\]")
_PRECISION = re.compile(
    r"\b(FP32|FP16|BF16|FP8|FP4|INT8|INT4|INT32|INT64|UINT8|Bool|Float|Half|Int8|Int32|Int64)\b"
)
_ALIASES = {"Float": "FP32", "Half": "FP16", "Int8": "INT8", "Int32": "INT32", "Int64": "INT64"}


@dataclass
class TensorInfo:
    name: str
    dims: list[int]
    format: str
    precision: str


@dataclass
class EngineLayer:
    name: str
    type: str = ""
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    tactic: str = ""
    tactic_name: str = ""
    onnx_nodes: list[str] = field(default_factory=list)
    region: str = ""  # "ForeignNode[first...last]" for Myelin regions
    origin: str = ""
    # TensorRT 10's Myelin layers (``__myl_FcAddRelu_myl0_3``: one layer per fused kernel, its
    # ONNX nodes in its metadata): the region it belongs to ("myl0"), "" for any other layer
    myelin: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_reformat(self) -> bool:
        """A layer that only copies between formats or precisions — what the summary's
        "reformat layers" counts, so it agrees with the type table's "Reformat" row: a Q/DQ
        layer TensorRT runs as a Reformat is a quantize step ("Reformat (Q/DQ)"), and a
        "Reformatting CopyNode" elided to a NoOp costs nothing."""
        if self.origin == "REFORMAT":
            return True
        if self.type:
            return self.type == "Reformat" and self.origin != "QDQ"
        return self.name.startswith("Reformatting CopyNode")  # the names-only form

    @property
    def kind(self) -> str:
        """The layer type the summary groups by (Q/DQ reformats kept apart from copies)."""
        if self.type == "Reformat" and self.origin == "QDQ":
            return "Reformat (Q/DQ)"
        if self.is_reformat:
            return "Reformat"
        return self.type or "?"

    @property
    def precision(self) -> str:
        """The output precision (what the layer computes in, for overlays and diffs)."""
        found = [t.precision for t in self.outputs if t.precision]
        return found[0] if found else ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("raw")
        data["precision"] = self.precision
        return data


@dataclass
class EngineInfo:
    path: str
    layers: list[EngineLayer]
    bindings: list[str]
    detailed: bool  # False for the names-only form

    def by_name(self) -> dict[str, EngineLayer]:
        return {layer.name: layer for layer in self.layers}

    def onnx_to_layer(self) -> dict[str, str]:
        """ONNX node name → the engine layer that implements it."""
        return {node: layer.name for layer in self.layers for node in layer.onnx_nodes}


def precision_of(text: str) -> str:
    match = _PRECISION.search(text or "")
    return _ALIASES.get(match.group(1), match.group(1)) if match else ""


def onnx_nodes_from_name(name: str) -> tuple[list[str], str]:
    """(ONNX node names, Myelin region) from a TensorRT layer name."""
    if name.startswith("Reformatting CopyNode"):
        return [], ""
    region = re.search(r"ForeignNode\[(.*)\]", name)
    if region:
        ends = [e for e in region.group(1).split("...") if e]
        return ends, f"ForeignNode[{region.group(1)}]"
    nodes: list[str] = []
    for part in name.split(" + "):
        part = part.strip()
        while part.startswith("PWN(") and part.endswith(")"):
            part = part[4:-1]
        nodes.extend(p.strip().strip("()") for p in re.split(r",\s*|PWN\(", part) if p.strip("() "))
    return [n for n in nodes if n], ""


# Keys only a layer of --exportLayerInfo / IEngineInspector has (a device record has "Name" too).
LAYER_KEYS = frozenset(
    ("LayerType", "Inputs", "Outputs", "TacticValue", "TacticName", "Metadata", "Origin")
)


class _BadLayer(ValueError):
    """A field of a layer entry with the wrong type (turned into one sentence by the caller)."""


def _tensor(data: dict[str, Any]) -> TensorInfo:
    fmt = str(data.get("Format/Datatype", ""))
    dims = data.get("Dimensions") or []
    if not isinstance(dims, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) for d in dims
    ):
        raise _BadLayer(f"'Dimensions' {str(dims)[:40]} is not a list of integers")
    return TensorInfo(str(data.get("Name", "")), dims, fmt, precision_of(fmt))


def _tensors(data: dict[str, Any], key: str) -> list[TensorInfo]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _BadLayer(f"'{key}' is {type(value).__name__}, not a list")
    return [_tensor(t) for t in value if isinstance(t, dict)]


def _layer(data: dict[str, Any] | str) -> EngineLayer:
    if isinstance(data, str):
        nodes, region = onnx_nodes_from_name(data)
        return EngineLayer(name=data, onnx_nodes=nodes, region=region)
    name = str(data.get("Name", ""))
    metadata = str(data.get("Metadata", "") or "")
    from_meta = _META_NODE.findall(metadata)
    nodes, region = onnx_nodes_from_name(name)
    layer = EngineLayer(
        name=name,
        type=str(data.get("LayerType", "")),
        inputs=_tensors(data, "Inputs"),
        outputs=_tensors(data, "Outputs"),
        tactic=str(data.get("TacticValue", "")),
        tactic_name=str(data.get("TacticName", "")),
        onnx_nodes=from_meta or nodes,
        region=region,
        origin=str(data.get("Origin", "")),
        raw=data,
    )
    if layer.type == "Myelin" and not layer.region:
        layer.region = name
    return layer


_MYELIN_LAYER = re.compile(r"_(myl\d+)_\d+$")


def _myelin_regions(layers: list[EngineLayer]) -> None:
    """Each ``__myl_`` layer's Myelin region: named by its ``_mylK_N`` suffix, else one region
    per run of consecutive ``__myl_`` layers (what a layer list without the suffix can tell)."""
    run = -1
    previous = False
    for layer in layers:
        if not layer.name.startswith("__myl_"):
            previous = False
            continue
        named = _MYELIN_LAYER.search(layer.name)
        if named:
            layer.myelin = named.group(1)
        else:
            run += 0 if previous else 1
            layer.myelin = f"run {run}"
        previous = True


def myelin_region_count(layers: list[EngineLayer]) -> int:
    """Myelin regions: ForeignNode layers (TensorRT ≤ 9, and 10's names-only lists), each one,
    and TensorRT 10's ``__myl_`` layers grouped by region."""
    return len({layer.region for layer in layers if layer.region}) + len(
        {layer.myelin for layer in layers if layer.myelin}
    )


def load_layer_info(path: str | Path) -> EngineInfo:
    return parse_layer_info(read_json(path, "layer-info JSON"), str(path))


def parse_layer_info(data: Any, source: str = "") -> EngineInfo:
    name = Path(source).name or "the layer info"
    if isinstance(data, list) and data:  # some tools write the Layers list alone
        if all(isinstance(x, str) or (isinstance(x, dict) and LAYER_KEYS & x.keys()) for x in data):
            data = {"Layers": data}
        elif all(isinstance(x, dict) and "ComputeCapability" in x for x in data):
            raise UserError(
                f"{name} is TREx device metadata (*.engine.metadata.json: GPU name, compute "
                "capability), not trtexec --exportLayerInfo output."
            )
    if not isinstance(data, dict) or not isinstance(data.get("Layers"), list):
        raise UserError(
            f"{name} is not trtexec --exportLayerInfo output: it has no 'Layers' list "
            "(is it an --exportProfile or --exportTimes file?)."
        )
    raw_layers = data["Layers"]
    if not raw_layers:
        raise UserError(f"{name} lists no layers: an engine has at least one.")
    bad = [x for x in raw_layers if not isinstance(x, dict | str)]
    if bad:
        raise UserError(f"{name}: a layer entry is {type(bad[0]).__name__}, not an object.")
    layers = []
    for index, entry in enumerate(raw_layers):
        try:
            layers.append(_layer(entry))
        except _BadLayer as exc:
            raise UserError(f"{name}: layer {index}'s {exc}.") from None
    _myelin_regions(layers)
    detailed = any(isinstance(x, dict) and "LayerType" in x for x in raw_layers)
    bindings = data.get("Bindings", [])
    if not isinstance(bindings, list):
        raise UserError(f"{name}: 'Bindings' is {type(bindings).__name__}, not a list.")
    return EngineInfo(source, layers, [str(b) for b in bindings], detailed)
