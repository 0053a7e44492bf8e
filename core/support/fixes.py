"""The ladder of fixes for an unsupported op, in the seeds' order: change the opset, replace it
with a composition ONNX knows, register a symbolic / custom translation that emits that
composition, or emit a custom-domain op and give the runtime an implementation (plugin)."""

from __future__ import annotations

from dataclasses import dataclass

# ONNX op -> an equivalent composition of ops that every backend knows (the formula people use)
COMPOSITIONS: dict[str, str] = {
    "Asinh": "Log(x + Sqrt(x*x + 1))",
    "Acosh": "Log(x + Sqrt(x*x - 1))",
    "Atanh": "0.5 * Log((1 + x) / (1 - x))",
    "Sinh": "(Exp(x) - Exp(-x)) / 2",
    "Cosh": "(Exp(x) + Exp(-x)) / 2",
    "LayerNormalization": "ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul(scale), "
    "Add(bias)",
    "Gelu": "0.5 * x * (1 + Erf(x / Sqrt(2)))",
    "HardSwish": "x * HardSigmoid(x, alpha=1/6, beta=0.5)",
    "Mish": "x * Tanh(Softplus(x))",
    "Celu": "Max(0, x) + Min(0, alpha * (Exp(x / alpha) - 1))",
    "GroupNormalization": "Reshape to (N, G, -1), InstanceNormalization-style ReduceMean/Var, "
    "Reshape back, Mul(scale), Add(bias)",
    "GridSample": "no exact composition: use a plugin",
    "DeformConv": "no exact composition (bilinear sampling at learned offsets): use a plugin",
}


@dataclass(frozen=True)
class Suggestion:
    rank: int  # 1 opset, 2 composition, 3 symbolic/translation, 4 plugin
    kind: str
    text: str


def ladder(
    op: str,
    target: str,
    workable_opsets: list[int],
    model_opsets: tuple[int, int] | None,
    runtime: str,
) -> list[Suggestion]:
    steps: list[Suggestion] = []
    if workable_opsets:
        span = f"{workable_opsets[0]}–{workable_opsets[-1]}"
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
        else "a TensorRT plugin (IPluginV3) registered for the op"
    )
    steps.append(Suggestion(4, "plugin", f"Emit a custom-domain op and give {target} {plugin}."))
    return steps
