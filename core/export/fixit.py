"""The fix ladder (core/support/fixes) climbed for an export finding, each rung with code to
paste, export settings to apply in one click, or a plugin: change the opset or exporter →
replace the torch op with a composition → register a symbolic / custom translation →
custom-domain op + runtime implementation (plugin) → edit the exported graph (surgery)."""

from __future__ import annotations

import keyword
import re

from deploylens.core.codegen import literal
from deploylens.core.export.diagnose import Finding
from deploylens.core.export.result import ExportResult
from deploylens.core.export.settings import DYNAMO, TORCHSCRIPT
from deploylens.core.plugin_api import OpPlugin, plugins_for
from deploylens.core.support.compositions import COMPOSITIONS
from deploylens.core.support.fixes import Fix, FixSettings, numbered
from deploylens.core.support.matrix import SupportMatrix

# torch op -> (ONNX op it maps to, first opset, torch-level composition of the same math)
KNOWN_OPS: dict[str, tuple[str, int, str]] = {
    "aten::asinh": ("Asinh", 9, COMPOSITIONS["Asinh"].torch),
    "aten::acosh": ("Acosh", 9, COMPOSITIONS["Acosh"].torch),
    "aten::atanh": ("Atanh", 9, COMPOSITIONS["Atanh"].torch),
    "aten::sinh": ("Sinh", 9, COMPOSITIONS["Sinh"].torch),
    "aten::cosh": ("Cosh", 9, COMPOSITIONS["Cosh"].torch),
    "aten::roll": (
        "",
        0,
        "torch.cat((x.flatten()[-shift:], x.flatten()[:-shift])).view_as(x)"
        "  # roll without dims = roll of the flattened tensor",
    ),
    "torchvision::deform_conv2d": ("DeformConv", 19, ""),
}

# torch op -> (the plugin that exports it, the surgery pattern that makes its node the one
# TensorRT's parser resolves, what that node is): the ladder's graph-surgery rung
SURGERY: dict[str, tuple[str, str, str]] = {
    "torchvision::deform_conv2d": (
        "deform_conv2d",
        "deform_to_trt",
        "TensorRT's ModulatedDeformConv2d plugin node (version 1, inputs reordered)",
    ),
}


def _py_name(text: str) -> str:
    """A Python name made from an op's name (a function or class written into the pasted
    code): anything but letters, digits and ``_`` becomes ``_``."""
    name = re.sub(r"\W", "_", text, flags=re.ASCII) or "op"
    return f"_{name}" if name[0].isdigit() or keyword.iskeyword(name) else name


def _symbolic_code(op: str, onnx_op: str, letters: list[str], opset: int) -> str:
    name = "op"  # the function's name never comes from the model: the op is only a string
    tensors = [f"arg{i}" for i, letter in enumerate(letters)] or ["self"]
    args = ", ".join(tensors)
    tensor_args = ", ".join(
        a for a, letter in zip(tensors, letters or ["v"], strict=False) if letter == "v"
    )
    parse = ", ".join(literal(letter) for letter in (letters or ["v"]))
    emitted = onnx_op or f"custom::{op.split('::')[-1]}"
    return (
        "import torch\n"
        "from torch.onnx import symbolic_helper\n\n\n"
        f"@symbolic_helper.parse_args({parse})\n"
        f"def {name}_symbolic(g, {args}):\n"
        f"    return g.op({literal(emitted)}, {tensor_args})\n\n\n"
        f"torch.onnx.register_custom_op_symbolic({literal(op)}, {name}_symbolic, "
        f"{literal(int(opset))})\n"
        + ("" if onnx_op else "# and pass custom_opsets={'custom': 1} to torch.onnx.export\n")
    )


def _translation_code(op: str, onnx_op: str) -> str:
    namespace, _, name = op.partition("::")
    function = "translation"  # never a name from the model: the op is only a string
    body = (
        f"    return op.{_py_name(onnx_op)}(self)"
        if onnx_op
        else f"    raise NotImplementedError({literal(f'write {name} with onnxscript ops here')})"
    )
    return (
        "import onnxscript\n"
        "import torch\n"
        "from onnxscript import FLOAT\n"
        "from onnxscript import opset18 as op\n\n\n"
        "@onnxscript.script()\n"
        f"def {function}(self: FLOAT) -> FLOAT:  # onnxscript needs the return annotation\n"
        f"{body}\n\n\n"
        f"target = getattr(getattr(torch.ops, {literal(namespace)}), {literal(name)}).default\n"
        "torch.onnx.export(model, example, 'model.onnx', dynamo=True,\n"
        f"                  custom_translation_table={{target: {function}}})\n"
    )


def _wrapper_code(op: str, composition: str) -> str:
    """A drop-in ``autograd.Function`` whose forward is ``composition`` (lines; the last is
    the value: DeployLens's own table of compositions, never text from a model)."""
    name = _py_name(op.split("::")[-1])
    *lines, last = composition.splitlines()
    body = "".join(f"        {line}\n" for line in lines) + f"        return {last}\n"
    title = name.title().replace("_", "")
    return (
        "import torch\n\n\n"
        f"class {title}ForExport(torch.autograd.Function):\n"
        '    """Same math as the original op, in ops every exporter knows."""\n\n'
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        f"{body}\n\n"
        f"# in the model: replace torch.{name}(x) with {title}ForExport.apply(x)\n"
    )


def attach_fixes(
    result: ExportResult, matrix: SupportMatrix | None, plugins: dict[str, OpPlugin]
) -> ExportResult:
    """Every finding of an export result gets its ladder — the one place the CLI, the Export
    panel and the demo report do it (the demo's report.json had ``"fixes": []``)."""
    for finding in result.findings:
        finding.fixes = fix_ladder(finding, matrix, plugins)
    return result


# onnx.checker's words for an op the model's opset does not have
MISSING_OP = re.compile(r"No (?:Op|Schema) registered for (\w+) with domain_version of (\d+)")


def _first_opset(op: str) -> int | None:
    import onnx

    versions = [s.since_version for s in onnx.defs.get_all_schemas_with_history()
                if s.name == op and s.domain == ""]  # fmt: skip
    return min(versions) if versions else None


def fix_ladder(
    finding: Finding, matrix: SupportMatrix | None, plugins: dict[str, OpPlugin]
) -> list[Fix]:
    op = finding.operator
    fixes: list[Fix] = []
    other = TORCHSCRIPT if finding.exporter == DYNAMO else DYNAMO
    if finding.other_exporter == "exports":
        fixes.append(
            Fix(
                1,
                "exporter",
                f"Use the {other} exporter: it exports this model (tried on the same inputs)",
                settings=FixSettings(exporter=other),
            )
        )
    if finding.kind == "invalid_model":
        missing = MISSING_OP.search(finding.message)
        since = _first_opset(missing.group(1)) if missing else None
        if since is not None and missing is not None:
            fixes.append(
                Fix(
                    1,
                    "opset",
                    f"The exporter wrote {missing.group(1)}, which opset {missing.group(2)} does "
                    f"not have: export at opset {since} or later, where it exists",
                    settings=FixSettings(opset=max(since, 18 if finding.exporter == DYNAMO else 9)),
                )
            )
        return numbered(fixes)
    if finding.suggested_opset:
        fixes.append(
            Fix(
                1,
                "opset",
                f"Raise the opset to {finding.suggested_opset}: the "
                f"exporter says {finding.onnx_op or op} needs it",
                settings=FixSettings(opset=finding.suggested_opset),
            )
        )
    if not op:
        return numbered(fixes)
    known = KNOWN_OPS.get(op, ("", 0, ""))
    onnx_op, first_opset, composition = known
    if matrix is not None:
        torchscript = matrix.torchscript_opsets(op) or []
        dynamo = matrix.dynamo_overloads(op) or []
        if torchscript and finding.exporter == "dynamo":
            fixes.append(
                Fix(
                    1,
                    "exporter",
                    f"Use the TorchScript exporter (symbolic at opsets "
                    f"{torchscript[0]}–{torchscript[-1]})",
                    settings=FixSettings(exporter="torchscript", opset=torchscript[-1]),
                )
            )
        if finding.exporter == "torchscript" and torchscript and finding.opset is not None:
            newer = [o for o in torchscript if o > finding.opset]
            if newer:
                fixes.append(
                    Fix(
                        1,
                        "opset",
                        f"Raise the opset to {newer[0]} (TorchScript has "
                        f"a symbolic from {newer[0]})",
                        settings=FixSettings(opset=newer[0]),
                    )
                )
        if dynamo and finding.exporter == "torchscript":
            opset = max(18, first_opset)
            tried = [f for f in fixes if f.kind == "exporter" and f.settings.exporter == DYNAMO]
            for fix in tried:  # one rung for one move: the tried export, with the opset it needs
                fixes.remove(fix)
            said = "it exports this model (tried on the same inputs); " if tried else ""
            fixes.append(
                Fix(
                    1,
                    "exporter",
                    f"Use the dynamo exporter: {said}torchlib translates {op} (opset ≥ {opset})",
                    settings=FixSettings(exporter="dynamo", opset=opset),
                )
            )
    if composition:
        fixes.append(
            Fix(
                2,
                "composition",
                f"Replace {op} by a composition every exporter knows",
                code=_wrapper_code(op, composition),
            )
        )
    opset = max(finding.opset or 9, first_opset or 1)
    fixes.append(
        Fix(
            3,
            "symbolic",
            f"Register a TorchScript symbolic for {op}"
            + (f" emitting ONNX {onnx_op}" if onnx_op else " (custom domain)"),
            code=_symbolic_code(op, onnx_op, finding.schema_args, opset),
        )
    )
    fixes.append(
        Fix(
            3,
            "translation",
            f"Register a dynamo custom translation for {op}",
            code=_translation_code(op, onnx_op),
        )
    )
    for plugin in plugins_for(op, plugins):
        exporter = (
            plugin.exporters[0] if finding.exporter not in plugin.exporters else (finding.exporter)
        )
        fixes.append(
            Fix(
                4,
                "plugin",
                f"Apply plugin '{plugin.name}': {plugin.description}",
                plugin=plugin.name,
                settings=FixSettings(
                    exporter=exporter,
                    opset=max(finding.opset or 0, plugin.min_opset),
                    plugins=[plugin.name],
                ),
            )
        )
    if op in SURGERY and SURGERY[op][0] in plugins:
        plugin_name, pattern, target = SURGERY[op]
        fixes.append(
            Fix(
                5,
                "surgery",
                f"Export with plugin '{plugin_name}', then edit the ONNX graph: pattern "
                f"{pattern} rewrites the custom node to {target}",
                plugin=plugin_name,
                settings=FixSettings(
                    exporter=plugins[plugin_name].exporters[0],
                    opset=max(finding.opset or 0, plugins[plugin_name].min_opset),
                    plugins=[plugin_name],
                    surgery=[pattern],
                ),
            )
        )
    if not plugins_for(op, plugins):
        fixes.append(
            Fix(
                4,
                "plugin",
                f"Emit {op} as a custom-domain op and give the runtime an "
                "implementation (ONNX Runtime custom op, TensorRT plugin): write a "
                "DeployLens plugin (docs/plugins.md)",
            )
        )
    return numbered(fixes)
