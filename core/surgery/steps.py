"""A surgery is a chain of typed steps: applied in order, saved in a project or a steps file
(``[[steps]]`` tables), replayed by ``deploylens surgery MODEL --steps steps.toml`` and written
down as the onnx-graphsurgeon / onnxslim script that does the same."""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from deploylens.core import typed
from deploylens.core.codegen import comment, docstring, identifier, literal
from deploylens.core.errors import UserError
from deploylens.core.surgery.pattern_names import PATTERN_NAMES

if TYPE_CHECKING:  # the CLI checks steps without onnx; the worker that applies them has it
    import onnx

StepOp = Literal[
    "fold", "pattern", "extract", "replace", "rename_domain", "cut_outputs", "set_dims"
]
STEP_OPS: tuple[str, ...] = typing.get_args(StepOp)
# the fields each op reads: any other field set in a step is a mistake, not a no-op
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "fold": (),
    "pattern": ("pattern",),
    "extract": ("inputs", "outputs"),
    "replace": ("nodes", "new_op", "domain", "attrs", "name", "inputs", "outputs", "inherit_attrs"),
    "rename_domain": ("domain", "new_domain", "only_op", "new_op", "attrs"),
    "cut_outputs": ("outputs",),
    "set_dims": ("dims",),
}


@dataclass
class Step:
    """One surgery step; only the fields of its ``op`` are read (others must stay empty)."""

    op: StepOp
    pattern: str = ""  # pattern: layernorm | minmax_clip | gelu | deform_to_trt | deform_from_trt
    inputs: list[str] = field(default_factory=list)  # extract / replace: tensor names
    outputs: list[str] = field(default_factory=list)  # extract / replace / cut_outputs
    nodes: list[str] = field(default_factory=list)  # replace: node names
    new_op: str = ""  # replace / rename_domain: the op type written
    domain: str = ""  # replace: the new node's domain; rename_domain: the old domain
    new_domain: str = ""  # rename_domain
    only_op: str = ""  # rename_domain: only nodes of this op type
    attrs: dict[str, Any] = field(default_factory=dict)  # replace / rename_domain
    dims: dict[str, list[Any]] = field(default_factory=dict)  # set_dims: input → [int | name]
    name: str = ""  # replace: the new node's name
    inherit_attrs: bool = False  # replace: the matched nodes' attributes as <op>_<name>

    def check(self) -> None:
        """Refuse a step that names what its op needs wrongly (before any model is read)."""
        blank = Step(op=self.op)
        ignored = [
            name
            for name in (f.name for f in fields(Step))
            if name != "op"
            and name not in STEP_FIELDS[self.op]
            and getattr(self, name) != getattr(blank, name)
        ]
        if ignored:
            raise UserError(
                f"a {self.op} step does not read {', '.join(ignored)}",
                f"a {self.op} step reads "
                + (", ".join(STEP_FIELDS[self.op]) or "no other field")
                + "; remove the rest (it would be silently ignored)",
            )
        _check_text(self)
        if self.op == "pattern" and self.pattern not in PATTERN_NAMES:
            raise UserError(
                f"unknown pattern {self.pattern!r}",
                f"built-in patterns: {', '.join(PATTERN_NAMES)}",
            )
        if self.op == "extract" and not self.outputs:
            raise UserError("an extract step needs outputs = [tensor names]")
        if self.op == "replace" and not (self.nodes and self.new_op):
            raise UserError("a replace step needs nodes = [node names] and new_op")
        if self.op == "rename_domain" and not (self.domain or self.only_op):
            raise UserError("a rename_domain step needs domain (the old one) or only_op")
        if self.op == "cut_outputs" and not self.outputs:
            raise UserError("a cut_outputs step needs outputs = [graph output names]")
        if self.op == "set_dims" and not self.dims:
            raise UserError("a set_dims step needs dims = { input = [1, 3, 224, 224] }")

    def title(self) -> str:
        detail = {
            "fold": "fold constants and simplify (onnxslim)",
            "pattern": f"pattern {self.pattern}",
            "extract": f"extract {', '.join(self.inputs) or 'graph inputs'} → "
            + ", ".join(self.outputs),
            "replace": f"replace {len(self.nodes)} node(s) by "
            + f"{self.domain or 'ai.onnx'}::{self.new_op}",
            "rename_domain": f"domain {self.domain!r} → {self.new_domain!r}"
            + (f" ({self.only_op} → {self.new_op})" if self.new_op else ""),
            "cut_outputs": f"cut outputs {', '.join(self.outputs)}",
            "set_dims": "set dims " + ", ".join(f"{k}={v}" for k, v in self.dims.items()),
        }
        return detail[self.op]


# An op type or domain as runtimes look them up (TensorRT's plugin registry, ORT's custom ops).
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _check_text(step: Step) -> None:
    """Names, domains and attribute values as ONNX can hold them: no NUL byte (protobuf
    strings cut there), attributes of the kinds ONNX has (numbers, text, lists of them)."""
    texts = [step.pattern, step.new_op, step.domain, step.new_domain, step.only_op, step.name]
    texts += [*step.inputs, *step.outputs, *step.nodes, *step.attrs, *step.dims]
    if any("\x00" in text for text in texts):
        raise UserError("a step's name, domain or op contains a NUL byte: not an ONNX name")
    for what, text in (("op type", step.new_op), ("op type", step.only_op),
                       ("domain", step.domain), ("domain", step.new_domain)):  # fmt: skip
        if text and not OP_NAME.fullmatch(text):
            raise UserError(
                f"the {what} {text[:60]!r} is not one a runtime can look up (letters, digits, "
                "'_', '.', '-' only; a newline or a space would be written into the model)"
            )
    for key, value in step.attrs.items():
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, int | float | str) for v in items):
            raise UserError(
                f"attribute {key!r} = {str(value)[:40]!r} is not a number, text or a "
                "non-empty list of them (what an ONNX attribute holds)"
            )
        if any(isinstance(v, str) and "\x00" in v for v in items):
            raise UserError(f"attribute {key!r} contains a NUL byte")
    for key, dims in step.dims.items():
        if not all(isinstance(d, int | str) and not isinstance(d, bool) for d in dims):
            raise UserError(f"dims of {key!r}: each dim is a whole number or a name")


def apply_step(model: onnx.ModelProto, step: Step) -> tuple[onnx.ModelProto, dict[str, Any]]:
    from deploylens.core.surgery import graph_ops
    from deploylens.core.surgery.patterns import PATTERNS

    step.check()
    actions: dict[str, Callable[[], tuple[onnx.ModelProto, dict[str, Any]]]] = {
        "fold": lambda: graph_ops.fold(model),
        "pattern": lambda: PATTERNS[step.pattern](model),
        "extract": lambda: graph_ops.extract(
            model, step.inputs or [i.name for i in model.graph.input], step.outputs
        ),
        "replace": lambda: graph_ops.replace_by_node(
            model,
            step.nodes,
            step.new_op,
            step.domain,
            step.attrs,
            step.name,
            step.inputs or None,
            step.outputs or None,
            step.inherit_attrs,
        ),
        "rename_domain": lambda: graph_ops.rename_domain(
            model, step.domain, step.new_domain, step.only_op, step.new_op, step.attrs
        ),
        "cut_outputs": lambda: graph_ops.cut_outputs(model, step.outputs),
        "set_dims": lambda: graph_ops.set_dims(model, step.dims),
    }
    edited, report = actions[step.op]()
    carry_node_metadata(model, edited, step.nodes if step.op == "replace" else [])
    return edited, {"step": step.title(), **report}


def carry_node_metadata(
    original: onnx.ModelProto, edited: onnx.ModelProto, replaced: list[str]
) -> None:
    """Give the edited graph's nodes the metadata their originals had (a dynamo export's name
    scopes: the Graph panel's hierarchy). onnx-graphsurgeon and onnxslim drop it, so one replace
    or fold flattened the whole model's groups; untouched nodes now keep theirs, and a
    replacement node takes the scope of the first node it replaced."""
    props = {n.name: list(n.metadata_props) for n in original.graph.node if n.metadata_props}
    if not props:
        return
    first = next((props[name] for name in replaced if name in props), None)
    known = {n.name for n in original.graph.node}
    for node in edited.graph.node:
        if node.metadata_props:
            continue
        carried = props.get(node.name) or (first if node.name not in known else None)
        if carried:
            node.metadata_props.extend(carried)


def apply_steps(
    model: onnx.ModelProto,
    steps: list[Step],
    progress: Callable[[float, str], None] | None = None,
) -> tuple[onnx.ModelProto, list[dict[str, Any]]]:
    reports = []
    for index, step in enumerate(steps):
        if progress:
            progress(index / max(len(steps), 1), step.title())
        try:
            model, report = apply_step(model, step)
        except UserError as exc:
            raise UserError(f"step {index + 1} ({step.title()}): {exc.message}", exc.hint) from None
        reports.append(report)
    return model, reports


# -- steps files -----------------------------------------------------------------------------------
def steps_from_toml(text: str, where: str = "the steps file") -> list[Step]:
    from deploylens.core.files import parse_toml

    data = parse_toml(text, where, "steps file")
    return steps_from_list(data.get("steps", []), where)


def steps_from_list(items: Any, where: str) -> list[Step]:
    if not isinstance(items, list):
        raise UserError(f"{where}: steps must be a list of tables ([[steps]])")
    steps = [typed.from_dict(Step, item, f"{where}, step {i + 1}") for i, item in enumerate(items)]
    for step in steps:
        step.check()
    return steps


def steps_to_toml(steps: list[Step]) -> str:
    import tomli_w

    return tomli_w.dumps({"steps": [step_table(s) for s in steps]})


def step_table(step: Step) -> dict[str, Any]:
    """Only the fields that differ from the defaults (a steps file stays readable)."""
    blank = Step(op=step.op)
    data = typed.to_dict(step)
    return {k: v for k, v in data.items() if k == "op" or v != getattr(blank, k)}


# -- the reproducer --------------------------------------------------------------------------------
def reproducer_script(model: str, output: str, steps: list[Step]) -> str:
    """A standalone script: onnxslim for folding, onnx-graphsurgeon for the edits that gs does
    one to one, and DeployLens's pattern function (itself onnx-graphsurgeon) for patterns."""
    lines = [
        docstring(f"Graph surgery on {model}: {len(steps)} step(s), as DeployLens did them."),
        "",
        "import onnx",
        "import onnx_graphsurgeon as gs",
        "",
        f"model = onnx.load({literal(model)})",
        "ir_version = model.ir_version  # gs writes the newest IR, which ONNX Runtime may not read",
    ]
    for step in steps:
        lines += ["", comment(step.title())]
        lines += _step_code(step)
    lines += [
        "",
        "model.ir_version = ir_version",
        "onnx.checker.check_model(model)",
        f"onnx.save(model, {literal(output)})",
        f"print('wrote', {literal(output)}, len(model.graph.node), 'nodes')",
        "",
    ]
    return "\n".join(lines)


def _step_code(step: Step) -> list[str]:
    if step.op == "fold":
        return ["import onnxslim", "", "model = onnxslim.slim(model)"]
    if step.op == "pattern":
        return [
            f"from deploylens.core.surgery.patterns import {identifier(step.pattern, 'pattern')}",
            "",
            f"model, _ = {step.pattern}(model)  # onnx-graphsurgeon inside",
        ]
    if step.op == "extract":
        return [
            "model = onnx.shape_inference.infer_shapes(model)",
            "graph = gs.import_onnx(model)",
            "tensors = graph.tensors()",
            f"graph.inputs = [tensors[n] for n in {literal(step.inputs)}]" if step.inputs else "",
            "for t in graph.inputs:",
            "    t.inputs.clear()",
            f"graph.outputs = [tensors[n] for n in {literal(step.outputs)}]",
            "graph.cleanup().toposort()",
            "model = gs.export_onnx(graph)",
        ]
    if step.op == "replace":
        lines = [
            "graph = gs.import_onnx(model)",
            "tensors = graph.tensors()",
            f"chosen = [n for n in graph.nodes if n.name in {literal(step.nodes)}]",
            "ids = {id(n) for n in chosen}",
            "made = {id(t) for n in chosen for t in n.outputs}",
        ]
        if step.inputs:
            lines.append(f"inputs = [tensors[t] for t in {literal(step.inputs)}]")
        else:
            lines += [
                "inputs = []",
                "for t in (t for n in chosen for t in n.inputs):",
                "    if id(t) not in made and all(t is not s for s in inputs):",
                "        inputs.append(t)",
            ]
        if step.outputs:
            lines.append(f"outputs = [tensors[t] for t in {literal(step.outputs)}]")
        else:
            lines += [
                "finals = {id(t) for t in graph.outputs}",
                "outputs = [t for n in chosen for t in n.outputs",
                "           if id(t) in finals or any(id(c) not in ids for c in t.outputs)]",
            ]
        lines.append("attrs = {}")
        if step.inherit_attrs:
            lines += [
                "seen = {}",
                "for n in chosen:  # the matched nodes' plain attributes as <op>_<name>",
                "    op = n.op.lower()",
                "    seen[op] = seen.get(op, 0) + 1",
                "    prefix = op if seen[op] == 1 else f'{op}{seen[op]}'",
                "    for key, value in n.attrs.items():",
                "        listed = isinstance(value, (list, tuple))",
                "        if isinstance(value, (int, float, str)) or (",
                "            listed and all(isinstance(v, (int, float)) for v in value)",
                "        ):",
                "            attrs[f'{prefix}_{key}'] = list(value) if listed else value",
            ]
        lines += [
            f"attrs.update({literal(step.attrs)})",
            "for n in chosen:",
            "    n.inputs.clear()",
            "    n.outputs.clear()",
            f"graph.nodes.append(gs.Node({literal(step.new_op)}, "
            f"name={literal(step.name or step.new_op)}, attrs=attrs, inputs=inputs, "
            f"outputs=outputs, domain={literal(step.domain or None)}))",
            "graph.cleanup().toposort()",
            "model = gs.export_onnx(graph)",
        ]
        return lines
    if step.op == "rename_domain":
        return [
            "graph = gs.import_onnx(model)",
            "for node in graph.nodes:",
            f"    if (node.domain or '') == {literal(step.domain)}"
            + (f" and node.op == {literal(step.only_op)}:" if step.only_op else ":"),
            f"        node.domain = {literal(step.new_domain or None)}",
            *([f"        node.op = {literal(step.new_op)}"] if step.new_op else []),
            f"        node.attrs.update({literal(step.attrs)})",
            "model = gs.export_onnx(graph)",
        ]
    if step.op == "cut_outputs":
        return [
            "graph = gs.import_onnx(model)",
            f"graph.outputs = [t for t in graph.outputs if t.name not in {literal(step.outputs)}]",
            "graph.cleanup().toposort()",
            "model = gs.export_onnx(graph)",
        ]
    return [  # set_dims
        "for graph_input in (i for i in model.graph.input"
        f" if i.name in {literal(list(step.dims))}):",
        f"    dims = {literal(step.dims)}[graph_input.name]",
        "    shape = graph_input.type.tensor_type.shape",
        "    for dim, value in zip(shape.dim, dims):",
        "        if isinstance(value, int):",
        "            dim.dim_value = value",
        "        else:",
        "            dim.dim_param = value",
        "del model.graph.value_info[:]",
        "model = onnx.shape_inference.infer_shapes(model)",
    ]
