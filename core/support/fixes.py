"""The ladder of fixes for an unsupported op, in the seeds' order: change the opset, replace it
with a composition ONNX knows, register a symbolic / custom translation that emits that
composition, or emit a custom-domain op and give the runtime an implementation (plugin)."""

from __future__ import annotations

from dataclasses import dataclass

from deploylens.core.support.compositions import COMPOSITIONS as _COMPOSITIONS
from deploylens.core.support.compositions import NO_COMPOSITION

# ONNX op -> an equivalent composition of ops every backend knows (overflow-safe where it matters)
COMPOSITIONS: dict[str, str] = {
    **{op: c.text for op, c in _COMPOSITIONS.items()},
    **NO_COMPOSITION,
}


@dataclass(frozen=True)
class Suggestion:
    rank: int  # 1 opset, 2 composition, 3 symbolic/translation, 4 plugin
    kind: str
    text: str


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
) -> list[Suggestion]:
    """The rungs that can help: changing the opset only when the op works at some other
    opset than the model's (at the model's own it is blocked for another reason: types,
    attributes), and the plugin interface the target release really has."""
    steps: list[Suggestion] = []
    elsewhere = [o for o in workable_opsets if o != model_opset]
    if elsewhere and model_opset not in workable_opsets:
        span = f"{elsewhere[0]}–{elsewhere[-1]}"
        whole = (
            f"; the whole model works at opsets {model_opsets[0]}–{model_opsets[1]}"
            if model_opsets
            else ""
        )
        steps.append(
            Suggestion(
                1, "opset", f"Change the opset: {op} works on {target} at opsets {span}{whole}."
            )
        )
    composition = COMPOSITIONS.get(op)
    if composition and not composition.startswith("no exact"):
        steps.append(Suggestion(2, "composition", f"Replace {op} with {composition}."))
        steps.append(
            Suggestion(
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
    steps.append(Suggestion(4, "plugin", f"Emit a custom-domain op and give {target} {plugin}."))
    return steps
