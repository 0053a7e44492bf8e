"""Facts read from TensorRT's builder log when the engine cannot be loaded here (a TensorRT-RTX
plan built ahead of time on a machine with no GPU, so ``IEngineInspector`` cannot run).

The builder says, at VERBOSE level: which runner implements each layer (``Timing Runner: NAME
(Myelin[0x…])``), which ONNX nodes a fused region holds (``ForeignNode NAME metadata: [ONNX
Layer: a]\\x1e[ONNX Layer: b]…`` with detailed profiling verbosity), each layer's memory
(``Layer: NAME Host Persistent: … Scratch Memory: …``) and, with less verbosity, an ``Engine Layer
Information`` block (``Layer(KIND): NAME, Tactic: 0x…, in -> out``). ``layer_info`` turns that
into the ``Layers`` JSON the engine view reads (the inspector's layout, with a ``Source`` saying
where it came from) — the builder's own account, reported as such.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

SOURCE = (
    "TensorRT builder log: the engine was built ahead of time and no GPU here can load it for "
    "IEngineInspector"
)
_HEADER = "Engine Layer Information:"
_BLOCK_LINE = re.compile(
    r"^Layer\((?P<kind>[^)]*)\): (?P<name>.*?), Tactic: (?P<tactic>\S+), (?P<io>.*)$"
)
_RUNNER = re.compile(
    r"Timing Runner: (?P<name>.*) \((?P<kind>[A-Za-z]+)\[(?P<tactic>0x[0-9a-fA-F]+)\]\)$"
)
_METADATA = re.compile(r"^ForeignNode (?P<name>\{.*\}) metadata: (?P<meta>.*)$", re.S)
_MEMORY = re.compile(
    r"^Layer: (?P<name>.*) Host Persistent: (?P<host>\d+) bytes Device Persistent: (?P<device>\d+) "
    r"bytes Scratch Memory: (?P<scratch>\d+) bytes$"
)  # fmt: skip


def engine_layers(messages: Iterable[str]) -> list[dict[str, Any]]:
    """``[{name, kind, tactic, onnx_metadata, inputs, outputs, memory}]`` in build order."""
    layers: dict[str, dict[str, Any]] = {}

    def layer(name: str) -> dict[str, Any]:
        return layers.setdefault(name, {"name": name, "kind": "", "tactic": ""})

    for message in messages:
        text = message.strip()
        if _HEADER in text:
            for line in text.split(_HEADER, 1)[1].splitlines():
                match = _BLOCK_LINE.match(line.strip())
                if match:
                    entry = layer(match["name"])
                    inputs, _, outputs = match["io"].partition(" -> ")
                    entry.update(
                        kind=match["kind"],
                        tactic=match["tactic"],
                        inputs=inputs.strip(),
                        outputs=outputs.strip(),
                    )
            continue
        if (match := _RUNNER.search(text)) is not None:
            entry = layer(match["name"])
            entry["kind"] = entry["kind"] or match["kind"]
            entry["tactic"] = entry["tactic"] or match["tactic"]
        elif (match := _METADATA.match(text)) is not None:
            layer(match["name"])["onnx_metadata"] = match["meta"]
        elif (match := _MEMORY.match(text)) is not None:
            layer(match["name"])["memory"] = {
                key: int(match[key]) for key in ("host", "device", "scratch")
            }
    return list(layers.values())


def layer_info(layers: list[dict[str, Any]], bindings: list[str]) -> dict[str, Any]:
    """The layers in the ``--exportLayerInfo`` / inspector JSON layout, marked with their
    source (``parse_layer_info`` reads ``Name``, ``LayerType``, ``TacticValue``, ``Metadata``)."""
    return {
        "Source": SOURCE,
        "Layers": [
            {
                "Name": entry["name"],
                "LayerType": entry["kind"] or "unknown",
                "TacticValue": entry["tactic"],
                **({"Metadata": entry["onnx_metadata"]} if entry.get("onnx_metadata") else {}),
            }
            for entry in layers
        ],
        "Bindings": bindings,
    }
