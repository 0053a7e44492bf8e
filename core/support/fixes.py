"""The one fix ladder: change the opset or exporter → replace the op with a composition every
backend knows → register a symbolic / custom translation that emits it → emit a custom-domain
op and give the runtime an implementation (plugin). The support matrix climbs it for an ONNX op
on a target (``ladder`` here), the export diagnosis for a torch op (core/export/fixit); both
hand out the same ``Fix`` so the CLI, the panels and the reports number and name rungs alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deploylens.core import typed
from deploylens.core.support.compositions import COMPOSITIONS as _COMPOSITIONS
from deploylens.core.support.compositions import NO_COMPOSITION

# ONNX op -> an equivalent composition of ops every backend knows (overflow-safe where it matters)
COMPOSITIONS: dict[str, str] = {
    **{op: c.text for op, c in _COMPOSITIONS.items()},
    **NO_COMPOSITION,
}


RUNGS = ("opset/exporter", "composition", "symbolic/translation", "plugin", "graph surgery")


@dataclass
class FixSettings:
    """The export settings a fix puts in place with one click (None / empty: left as set)."""

    exporter: str = ""
    opset: int | None = None  # 0: the exporter's default
    plugins: list[str] = field(default_factory=list)
    surgery: list[str] = field(default_factory=list)  # patterns to apply to the exported model

    def __bool__(self) -> bool:
        return bool(self.exporter or self.opset is not None or self.plugins or self.surgery)


@dataclass
class Fix:
    """One way out of a blocker. ``rank`` is its rung (1–5, ``RUNGS``); ``step`` the number
    the user reads once the ladder is ``numbered`` (two fixes may share a rung)."""

    rank: int
    kind: str  # opset, exporter, composition, symbolic, translation, plugin, surgery
    title: str
    code: str = ""  # Python to paste
    plugin: str = ""  # a DeployLens plugin that applies it
    settings: FixSettings = field(default_factory=FixSettings)  # what applies it
    step: int = 0
    rung: str = ""  # the rung's name (from ``rank``), written out for a JSON reader

    def __post_init__(self) -> None:
        self.rung = RUNGS[self.rank - 1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "rung": self.rung,
            "rank": self.rank,
            "kind": self.kind,
            "title": self.title,
            "code": self.code,
            "plugin": self.plugin,
            "settings": typed.to_dict(self.settings),
        }


def numbered(fixes: list[Fix]) -> list[Fix]:
    """Fixes in rung order (stable within a rung), each given its ``step`` 1, 2, 3 …"""
    ordered = sorted(fixes, key=lambda fix: fix.rank)
    for step, fix in enumerate(ordered, 1):
        fix.step = step
    return ordered


def plugin_interface(target_detail: str) -> str:
    """The TensorRT plugin interface a release offers: IPluginV3 exists from TensorRT 10."""
    head = target_detail.split(".")[0]
    if head.isdigit() and int(head) < 10:
        return "IPluginV2DynamicExt (IPluginV3 needs TensorRT 10)"
    return "IPluginV3"


def ladder(
    op: str,
    target: str,
    workable_opsets: list[int],
    model_opsets: tuple[int, int] | None,
    runtime: str,
    model_opset: int | None = None,
    target_detail: str = "",
) -> list[Fix]:
    """The rungs that can help: changing the opset only when the op works at some other
    opset than the model's (at the model's own it is blocked for another reason: types,
    attributes), and the plugin interface the target release really has."""
    steps: list[Fix] = []
    elsewhere = [o for o in workable_opsets if o != model_opset]
    if elsewhere and model_opset not in workable_opsets:
        span = f"{elsewhere[0]}–{elsewhere[-1]}"
        whole = (
            f"; the whole model works at opsets {model_opsets[0]}–{model_opsets[1]}"
            if model_opsets
            else ""
        )
        steps.append(
            Fix(1, "opset", f"Change the opset: {op} works on {target} at opsets {span}{whole}.")
        )
    composition = COMPOSITIONS.get(op)
    if composition and not composition.startswith("no exact"):
        steps.append(Fix(2, "composition", f"Replace {op} with {composition}."))
        steps.append(
            Fix(
                3,
                "symbolic",
                f"Register a symbolic (TorchScript exporter) or a custom translation (dynamo "
                f"exporter, custom_translation_table) that emits {composition} for the aten op "
                f"behind {op}.",
            )
        )
    plugin = (
        "an ONNX Runtime custom op (onnxruntime-extensions @onnx_op in ai.onnx.contrib, "
        "or a C++ custom op library)"
        if runtime == "ort"
        else f"a TensorRT plugin ({plugin_interface(target_detail)}) registered for the op"
    )
    steps.append(Fix(4, "plugin", f"Emit a custom-domain op and give {target} {plugin}."))
    return numbered(steps)
