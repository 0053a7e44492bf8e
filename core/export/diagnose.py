"""Turn exporter failures into structured findings: which operator, which exporter and opset,
and the module and source line that called it when the exporter printed them."""

from __future__ import annotations

import re
import sysconfig
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from deploylens.core.support.fixes import Fix

UNSUPPORTED = re.compile(r"Exporting the operator '([\w:.]+)' to ONNX opset version (\d+)")
NAMESPACE = re.compile(r"unrecognized namespace (\w+::\w+)")
DISPATCH = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)', overload='(\w+)'")
DISPATCH_SHORT = re.compile(r"No ONNX function found for ([\w.]+::[\w.]+|[\w]+\.[\w.]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
EXPORT_OF = re.compile(r"ONNX export of (\w+) in opset (\d+)")
TRY_OPSET = re.compile(r"try opset version (\d+)", re.IGNORECASE)
IR_LINE = re.compile(r"= ([\w:.]+)\(.*?\)(?:, scope: (\S+))?(?: # (.+?):(\d+):\d+)?$")
SUMMARY_CLASS = re.compile(r"^<class '([\w.]+)'>: (.*)$")
ORIGINAL_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
CAUSED_BY = re.compile(r"Caused by: \(([^()]+?):(\d+) in (\w+)\)")
ATEN = re.compile(r"\b(aten|torchvision|prims)[.:]{1,2}(\w+)")
# Frames that are never the model's own code: the exporters, Python itself, DeployLens.
FRAMEWORK = ("/torch/", "/onnxscript/", "/deploylens/", "/importlib/", "/contextlib.py",
             "<frozen ", "/site-packages/typing_extensions")  # fmt: skip


@dataclass
class Finding:
    kind: str  # unsupported_op | symbolic_failed | invalid_model | torch_export | ort | other
    exporter: str
    opset: int | None
    message: str
    operator: str = ""
    module_path: str = ""
    source: str = ""  # file:line
    schema_args: list[str] = field(default_factory=list)  # parse_args letters for a symbolic
    onnx_op: str = ""  # the ONNX op the exporter could not emit, when it says so
    suggested_opset: int | None = None  # when the exporter names an opset that works
    fixes: list[Fix] = field(default_factory=list)  # its ladder (``fixit.attach_fixes``)
    # the other exporter, tried on the same model: "" not tried, "exports" when it wrote a
    # model, else its own first line
    other_exporter: str = ""


def _where(operator: str, stderr_text: str) -> tuple[str, str]:
    """Module path and file:line of the op from the TorchScript IR the exporter printed."""
    for line in stderr_text.splitlines():
        if f"= {operator}(" not in line:
            continue
        match = IR_LINE.search(line.strip())
        if match:
            scope = (match.group(2) or "").rstrip(":")
            module = scope.split("::")[-1] if scope else ""
            source = f"{match.group(3)}:{match.group(4)}" if match.group(3) else ""
            if any(part in source.replace("\\", "/") for part in FRAMEWORK):
                source = ""  # torch's own dispatch (torch/_ops.py), not a line the user wrote
            return module, source
    return "", ""


def parse_args_letters(operator: str) -> list[str]:
    """``parse_args`` letters for a symbolic of ``operator``, from its torch schema."""
    try:
        import torch

        namespace, _, name = operator.partition("::")
        packet = getattr(getattr(torch.ops, namespace), name)
        schema = packet.default._schema if hasattr(packet, "default") else packet._schema
    except Exception:
        return []
    letters = []
    for argument in schema.arguments:
        text = str(argument.type)
        letters.append(
            "v"
            if "Tensor" in text or text in ("Scalar", "number")
            else "is"
            if text.startswith("List[int]") or text == "int[]"
            else "i"
            if text == "int"
            else "f"
            if text == "float"
            else "b"
            if text == "bool"
            else "s"
            if text == "str"
            else "none"
        )
    return letters


def summary_line(text: str) -> tuple[str, str]:
    """torch's own "Exception summary" (the dynamo exporter's real cause, under its generic
    first line "Failed to export the model with torch.export…"): (``Class: message``, the
    ``file:line in function`` it says caused it) — ("", "") without one."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "## Exception summary")
    except StopIteration:
        return "", ""
    first = ""
    for line in lines[start + 1 :]:
        match = SUMMARY_CLASS.match(line.strip())
        if match:
            first = f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(2).strip()}"
            break
    rest = "\n".join(lines[start:])
    caused = CAUSED_BY.search(rest)
    where = f"{caused.group(1)}:{caused.group(2)} in {caused.group(3)}" if caused else ""
    if not where and "Original traceback:" in rest:  # a failure while decomposing: the FX
        # node's own traceback, outermost first; its last frame is the line that made the node
        frames = ORIGINAL_FRAME.findall(rest.split("Original traceback:", 1)[1])
        if frames:
            name, line, function = frames[-1]
            where = f"{name.split('site-packages/', 1)[-1]}:{line} in {function}"
    return first, where


STDLIB = sysconfig.get_paths()["stdlib"]
OURS = str(Path(__file__).resolve().parents[1])  # core/ (or deploylens/core when installed)


def model_frame(exc: BaseException) -> str:
    """The innermost frame of the model's own code (the user's file, transformers, torchvision
    — anything but the exporters, Python and DeployLens) along the exception's chain, as
    ``file:line in function`` (paths from ``site-packages/`` on)."""
    found = ""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in traceback.extract_tb(current.__traceback__):
            name = frame.filename.replace("\\", "/")
            if any(part in name for part in FRAMEWORK) or name.startswith((STDLIB, OURS)):
                continue
            short = name.split("site-packages/", 1)[-1]
            found = f"{short}:{frame.lineno} in {frame.name}"
        current = current.__cause__ or current.__context__
    return found


def diagnose(
    exc: BaseException, exporter: str, opset: int | None, stderr_text: str = ""
) -> list[Finding]:
    text = ANSI.sub("", str(exc)).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    summary, caused_by = summary_line(text)
    operator = ""
    kind = "other"
    if match := UNSUPPORTED.search(text):
        operator, kind = match.group(1), "unsupported_op"
        opset = int(match.group(2))
    elif match := NAMESPACE.search(text):
        operator, kind = match.group(1), "unsupported_op"
    elif (match := DISPATCH.search(text)) or (match := DISPATCH_SHORT.search(text)):
        operator, kind = match.group(1).replace(".", "::", 1), "unsupported_op"
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        symbolic = [f for f in frames if "symbolic_opset" in f.filename]
        if symbolic:  # the outermost symbolic frame is the registered one; deeper are helpers
            operator, kind = f"aten::{symbolic[0].name}", "symbolic_failed"
        elif summary or any("torch/export" in f.filename or "_dynamo" in f.filename
                            for f in frames):  # fmt: skip
            kind = "torch_export"
        elif type(exc).__name__ == "ValidationError":
            kind = "invalid_model"
        if summary and not operator and (found := ATEN.search(summary)):
            operator = f"{found.group(1)}::{found.group(2)}"
    module, source = _where(operator, stderr_text) if operator else ("", "")
    source = source or caused_by or model_frame(exc)
    export_of = EXPORT_OF.search(text)
    suggested = TRY_OPSET.search(text)
    message = summary or f"{type(exc).__name__}: {first}"
    return [
        Finding(
            kind=kind,
            exporter=exporter,
            opset=opset,
            message=message[:500],
            operator=operator,
            module_path=module,
            source=source,
            schema_args=parse_args_letters(operator) if operator else [],
            onnx_op=export_of.group(1) if export_of else "",
            suggested_opset=int(suggested.group(1)) if suggested else None,
        )
    ]
