"""What a TensorRT ONNX parser said about a model, as findings: the node, its op, the parser's
error code and sentence, and — where the parser fell back to a plugin — the plugin name, version
and namespace it searched for (TensorRT logs them at INFO level; the error itself only says
"Plugin not found"). ``explain`` turns a finding into the fix: which plugin library to load and
whether DeployLens has a reference implementation of the op for validation."""

from __future__ import annotations

import re
from collections.abc import Iterable

from deploylens.core.errors import UserError
from deploylens.core.plugin_api import OpPlugin
from deploylens.core.support.result import ParserFinding, RegisteredPlugin, plugin_list

# onnx-tensorrt's two spellings (10.x/RTX importers), e.g.
# "… using pluginName: customOp2, pluginVersion: 1, pluginNamespace: custom_domain"
# "Searching for plugin: DeformConv, plugin_version: 1, plugin_namespace: "
_SEARCHES = tuple(
    re.compile(rf"{name}: (?P<name>\S+), {version}: (?P<version>\S*), {namespace}: ?(?P<ns>\S*)")
    for name, version, namespace in (
        ("pluginName", "pluginVersion", "pluginNamespace"),
        ("Searching for plugin", "plugin_version", "plugin_namespace"),
    )
)


class ParseRejected(UserError):
    """The ONNX parser rejected the model; ``findings`` holds every error it reported."""

    def __init__(self, message: str, hint: str, findings: list[ParserFinding]) -> None:
        super().__init__(message, hint)
        self.findings = findings


def plugin_searches(messages: Iterable[str]) -> dict[str, list[dict[str, str]]]:
    """Op (plugin name) → the lookups the parser logged, in order, without repeats."""
    found: dict[str, list[dict[str, str]]] = {}
    for message in messages:
        if "lugin" not in message:  # the one word every lookup has: most messages skip the regexes
            continue
        for pattern in _SEARCHES:
            match = pattern.search(message)
            if match:
                entry = {
                    "name": match["name"],
                    "version": match["version"],
                    "namespace": match["ns"],
                }
                entries = found.setdefault(match["name"], [])
                if entry not in entries:
                    entries.append(entry)
    return found


def _plugin_for(finding: ParserFinding, plugins: dict[str, OpPlugin]) -> OpPlugin | None:
    """The DeployLens plugin that emits this node's op (``domain::op`` or a bare op)."""
    namespaces = {s["namespace"] for s in finding.plugin_searched if s["namespace"]}
    keys = {finding.op, *(f"{ns}::{finding.op}" for ns in namespaces)}
    for plugin in plugins.values():
        if keys & set(plugin.onnx_ops):
            return plugin
    return None


def registry_note(
    name: str, version: str, registered: list[RegisteredPlugin] | None, product: str
) -> str:
    """That no plugin of that name ships with the installed TensorRT, and what its registry
    holds ("" where it holds the name, or was not asked)."""
    if registered is None:
        return ""
    if any(p.name == name for p in registered):
        return ""  # there under another version: ``version_fix`` says so
    return f"; {product}'s own plugin registry (asked live) holds only: {plugin_list(registered)}"


def version_fix(
    name: str, version: str, registered: list[RegisteredPlugin] | None, product: str
) -> str:
    """The fix when the registry holds the plugin under another version only ("" otherwise)."""
    same = sorted({p.version for p in (registered or []) if p.name == name})
    if not same or version in same:
        return ""
    return (
        f"{product} registers {name} as version {'/'.join(same)}, not {version}: set the node's "
        f'plugin_version attribute to "{same[-1]}" (graph surgery)'
    )


def explain(
    finding: ParserFinding,
    plugins: dict[str, OpPlugin],
    registered: list[RegisteredPlugin] | None = None,
    product: str = "TensorRT",
) -> str:
    """The fix for one finding, naming the plugin library, the reference status and what the
    installed TensorRT's registry holds (``registered``, asked live; None: not asked)."""
    if not finding.plugin_not_found:
        return "see the op-support matrix for this op's restrictions, or replace the node"
    wanted = finding.plugin_searched[-1] if finding.plugin_searched else None
    asked = (
        f"a plugin registered as {wanted['name']} version {wanted['version'] or '1'}"
        + (f" in namespace '{wanted['namespace']}'" if wanted["namespace"] else "")
        if wanted
        else f"a plugin named {finding.op}"
    )
    name = wanted["name"] if wanted else finding.op
    version = (wanted["version"] or "1") if wanted else "1"
    if fix := version_fix(name, version, registered, product):
        return f"the parser looked for {asked}: {fix}"
    shipped = registry_note(name, version, registered, product)
    plugin = _plugin_for(finding, plugins)
    if plugin is None:
        return (
            f"the parser looked for {asked}{shipped}: load a plugin library that registers it "
            "(build setting plugins = ['lib….so']); no DeployLens plugin covers this op, so "
            "there is no reference implementation to validate it with either"
        )
    reference = (
        f"DeployLens plugin '{plugin.name}' has an ONNX Runtime reference implementation "
        "(validation runs)"
        if plugin.register_ort_reference
        else f"DeployLens plugin '{plugin.name}' has no reference implementation"
    )
    ref = plugin.tensorrt_plugin_for(finding.op)
    if not ref:
        return (
            f"the parser looked for {asked}{shipped}: {reference} but names no TensorRT plugin "
            "library — write one (IPluginV3) registered under that name and list it in plugins"
        )
    library = ref.get("library", "")
    text = (
        f"the parser looked for {asked}{shipped}: load {library} (plugins = ['…/{library}']); "
        f"{reference}"
    )
    if wanted and ref.get("name") and ref["name"] != wanted["name"]:
        text += (
            f"; that library registers '{ref['name']}', not '{wanted['name']}': rename the node "
            f"to {ref['name']} (graph surgery) or register the creator under '{wanted['name']}'"
        )
    return text


def explained(
    findings: list[ParserFinding],
    plugins: dict[str, OpPlugin],
    registered: list[RegisteredPlugin] | None = None,
    product: str = "TensorRT",
) -> list[ParserFinding]:
    for finding in findings:
        finding.fix = explain(finding, plugins, registered, product)
    return findings
