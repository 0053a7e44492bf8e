"""The ONNX operator spec with its full version history, from ``onnx.defs``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deploylens.core.model.domains import DEFAULT_DOMAIN, domain_name

INTRODUCED, CHANGED, UNCHANGED, ABSENT, DEPRECATED = (
    "introduced",
    "changed",
    "unchanged",
    "absent",
    "deprecated",
)


@dataclass
class OpVersion:
    since: int
    deprecated: bool
    summary: str
    inputs: list[tuple[str, str]]  # (name, type string: a constraint name or a type)
    outputs: list[tuple[str, str]]
    attributes: list[str]
    type_constraints: dict[str, list[str]]
    has_function: bool
    function_ops: list[tuple[str, str]] = field(default_factory=list)  # body's (domain, op)


@dataclass
class OpHistory:
    domain: str
    name: str
    versions: list[OpVersion] = field(default_factory=list)  # ascending ``since``

    def resolve(self, opset: int) -> OpVersion | None:
        """The version a model importing ``opset`` of this domain gets, or None."""
        found = None
        for version in self.versions:
            if version.since <= opset:
                found = version
        return None if found is None or found.deprecated else found

    def state(self, opset: int) -> str:
        found = None
        for index, version in enumerate(self.versions):
            if version.since <= opset:
                found = index
        if found is None:
            return ABSENT
        version = self.versions[found]
        if version.deprecated:
            return DEPRECATED
        if version.since == opset:
            return INTRODUCED if found == 0 else CHANGED
        return UNCHANGED


def _summary(doc: str) -> str:
    text = " ".join(doc.split())
    for stop in (". ", ".\n"):
        if stop in text:
            return text.split(stop)[0] + "."
    return text[:300]


def load_spec() -> dict[str, Any]:
    """Every op of every domain with every version (JSON-ready)."""
    import onnx

    histories: dict[tuple[str, str], OpHistory] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        key = (domain_name(schema.domain), schema.name)
        history = histories.setdefault(key, OpHistory(*key))
        history.versions.append(
            OpVersion(
                since=schema.since_version,
                deprecated=bool(schema.deprecated),
                summary=_summary(schema.doc or ""),
                inputs=[(p.name, p.type_str) for p in schema.inputs],
                outputs=[(p.name, p.type_str) for p in schema.outputs],
                attributes=sorted(schema.attributes),
                type_constraints={
                    tc.type_param_str: list(tc.allowed_type_strs) for tc in schema.type_constraints
                },
                has_function=bool(
                    schema.has_function  # type: ignore[attr-defined]  # missing from onnx's stubs
                    or schema.has_context_dependent_function  # type: ignore[attr-defined]
                ),
                function_ops=sorted(
                    {
                        (domain_name(n.domain), n.op_type)
                        for n in (
                            schema.function_body.node
                            if schema.has_function  # type: ignore[attr-defined]
                            else []
                        )
                    }
                ),
            )
        )
    for history in histories.values():
        history.versions.sort(key=lambda v: v.since)
    max_opset = {DEFAULT_DOMAIN: onnx.defs.onnx_opset_version()}
    for (domain, _), history in histories.items():
        if domain != DEFAULT_DOMAIN:
            max_opset[domain] = max(max_opset.get(domain, 1), history.versions[-1].since)
    return {
        "onnx_version": onnx.__version__,
        "max_opset": max_opset,
        "ops": [asdict(h) for h in sorted(histories.values(), key=lambda h: (h.domain, h.name))],
    }


def histories_from(data: dict[str, Any]) -> dict[tuple[str, str], OpHistory]:
    result = {}
    for item in data["ops"]:
        versions = [
            OpVersion(
                **{
                    **v,
                    "inputs": [tuple(p) for p in v["inputs"]],
                    "outputs": [tuple(p) for p in v["outputs"]],
                    "function_ops": [tuple(p) for p in v.get("function_ops", [])],
                }
            )
            for v in item["versions"]
        ]
        result[(item["domain"], item["name"])] = OpHistory(item["domain"], item["name"], versions)
    return result
