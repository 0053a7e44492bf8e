"""Map torch module calls to the ONNX tensors that hold their outputs.

Two exporters, two sources of truth:

* the dynamo exporter writes ``pkg.torch.onnx.name_scopes`` on every node: the module paths from
  the root down, then the FX node name. A fused node carries the scope of the *later* op (Conv
  fused with BatchNorm says ``bn1``), so the earlier module is reported as fused, not guessed;
* the TorchScript exporter names nodes ``/layer1/layer1.0/relu_1/Relu``: module components, a
  ``_N`` suffix for the N-th extra call of a module, then the op. Batch norm folded into the
  preceding conv leaves the conv's name on a tensor that holds the batch norm's output.

A module called several times (``relu`` in a ResNet block) has one key per call: ``path#k``.
Everything that cannot be mapped is listed with the reason, never silently dropped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SCOPES_KEY = "pkg.torch.onnx.name_scopes"
_CALL_SUFFIX = re.compile(r"^(.*)_(\d+)$")


@dataclass(frozen=True)
class Call:
    """One call of a module, in the order torch ran it."""

    path: str
    index: int
    type_name: str = ""

    @property
    def key(self) -> str:
        return f"{self.path}#{self.index}" if self.index else self.path


@dataclass
class ModuleMapping:
    tensors: dict[str, str] = field(default_factory=dict)  # call key -> ONNX tensor name
    producers: dict[str, int] = field(default_factory=dict)  # call key -> node index
    notes: dict[str, str] = field(default_factory=dict)  # call key -> how it was mapped
    unmapped: dict[str, str] = field(default_factory=dict)  # call key -> why not
    style: str = ""  # "dynamo", "torchscript" or "none"


def dynamo_chain(node: Any) -> list[str] | None:
    """Module paths of a dynamo-exported node (outermost first), or None without metadata."""
    for prop in node.metadata_props:
        if prop.key == SCOPES_KEY:
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                return None
            return [s for s in scopes[:-1] if s]  # drop the root '' and the FX node name
    return None


def torchscript_chain(name: str, modules: set[str]) -> list[tuple[str, int]]:
    """``/layer1/layer1.0/relu_1/Relu`` →
    ``[("layer1", 0), ("layer1.0", 0), ("layer1.0.relu", 1)]``."""
    parts = [p for p in name.split("/") if p]
    if len(parts) < 2:
        return []
    chain: list[tuple[str, int]] = []
    full, last = "", ""
    for part in parts[:-1]:
        index = 0
        candidate = _join(full, last, part)
        if candidate not in modules:
            match = _CALL_SUFFIX.match(part)
            if match and _join(full, last, match.group(1)) in modules:
                part, index = match.group(1), int(match.group(2))
                candidate = _join(full, last, part)
            else:
                return chain  # a scope that is not a module: stop, keep what matched
        chain.append((candidate, index))
        full, last = candidate, part
    return chain


def _join(full: str, last: str, part: str) -> str:
    if last and part.startswith(last + "."):  # "layer1" then "layer1.0": the child, spelled out
        return full + part[len(last) :]
    return f"{full}.{part}" if full else part


def _escaping_output(graph: Any, members: Sequence[int], consumers: dict[str, set[int]]) -> str:
    """The output of the last member node that is read outside the members (or by the graph)."""
    inside = set(members)
    graph_outputs = {o.name for o in graph.output}
    for index in sorted(members, reverse=True):
        for out in graph.node[index].output:
            if out and (out in graph_outputs or consumers.get(out, set()) - inside):
                result: str = out
                return result
    return ""


def _consumers(graph: Any) -> dict[str, set[int]]:
    result: dict[str, set[int]] = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            result.setdefault(name, set()).add(i)
    return result


def _dynamo_members(
    graph: Any, calls: Sequence[Call]
) -> tuple[dict[str, list[int]], dict[str, str]]:
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.path] = counts.get(call.path, 0) + 1
    chains = [dynamo_chain(node) or [] for node in graph.node]
    runs: dict[str, list[list[int]]] = {}
    last_seen: dict[str, int] = {}
    for i, chain in enumerate(chains):
        for path in chain:
            previous = last_seen.get(path)
            interrupted = previous is None or any(
                chains[j] and path not in chains[j] for j in range(previous + 1, i)
            )
            if interrupted:
                runs.setdefault(path, []).append([])
            runs[path][-1].append(i)
            last_seen[path] = i
    members: dict[str, list[int]] = {}
    problems: dict[str, str] = {}
    for path, path_runs in runs.items():
        expected = counts.get(path, 0)
        if expected == 1:
            members[Call(path, 0).key] = [i for run in path_runs for i in run]
        elif expected == len(path_runs):
            for k, run in enumerate(path_runs):
                members[Call(path, k).key] = run
        elif expected:
            for k in range(expected):
                problems[Call(path, k).key] = (
                    f"called {expected} times but the ONNX nodes form {len(path_runs)} regions"
                )
    return members, problems


def _torchscript_members(graph: Any, calls: Sequence[Call]) -> dict[str, list[int]]:
    modules = {call.path for call in calls}
    members: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for path, index in torchscript_chain(node.name, modules):
            members.setdefault(Call(path, index).key, []).append(i)
    return members


def exporter_style(graph: Any) -> str:
    if any(p.key == SCOPES_KEY for node in graph.node for p in node.metadata_props):
        return "dynamo"
    if any(node.name.startswith("/") for node in graph.node):
        return "torchscript"
    return "none"


def map_calls(graph: Any, calls: Sequence[Call]) -> ModuleMapping:
    """Assign every module call the ONNX tensor holding its output, or a reason why not."""
    mapping = ModuleMapping(style=exporter_style(graph))
    problems: dict[str, str] = {}
    if mapping.style == "dynamo":
        members, problems = _dynamo_members(graph, calls)
    elif mapping.style == "torchscript":
        members = _torchscript_members(graph, calls)
    else:
        members = {}
    consumers = _consumers(graph)
    for call in calls:
        nodes = members.get(call.key)
        if not nodes:
            continue
        tensor = _escaping_output(graph, nodes, consumers)
        if tensor:
            mapping.tensors[call.key] = tensor
            mapping.producers[call.key] = max(i for i in nodes if tensor in graph.node[i].output)
    _resolve_folding(graph, calls, mapping, members)
    for call in calls:
        if call.key in mapping.tensors or call.key in mapping.unmapped:
            continue
        mapping.unmapped[call.key] = problems.get(call.key) or (
            "no ONNX node carries this module"
            if mapping.style != "none"
            else "the model has no exporter scope names (names were rewritten?)"
        )
    return mapping


def _conv_norm_pairs(calls: Sequence[Call]) -> list[tuple[Call, Call]]:
    """A convolution's call and the batch norm's that follows it — the next call, or the next
    after the norm's own children (timm's BatchNormAct2d runs its drop and act modules first,
    so their hooks fire before the norm's)."""
    pairs = []
    for k, before in enumerate(calls):
        if "Conv" not in before.type_name:
            continue
        j = k + 1
        while j < len(calls) and "BatchNorm" not in calls[j].type_name:
            j += 1
        if j < len(calls) and all(c.path.startswith(calls[j].path + ".") for c in calls[k + 1 : j]):
            pairs.append((before, calls[j]))
    return pairs


def _resolve_folding(
    graph: Any, calls: Sequence[Call], mapping: ModuleMapping, members: dict[str, list[int]]
) -> None:
    """Conv followed by a batch norm that left no node: the conv's tensor is the norm's output.

    Dynamo's fused Conv carries the norm's scope (the norm maps, the conv has no node);
    TorchScript's folded Conv keeps the conv's name (the conv maps to a tensor that is really
    the norm's output). Both end the same way: compare at the norm, and say the conv was fused.
    """
    for before, after in _conv_norm_pairs(calls):
        has_before, has_after = before.key in mapping.tensors, after.key in mapping.tensors
        if has_before and not has_after:
            mapping.tensors[after.key] = mapping.tensors.pop(before.key)
            mapping.producers[after.key] = mapping.producers.pop(before.key)
            node = graph.node[mapping.producers[after.key]].name
            mapping.notes[after.key] = f"batch norm folded into {node}"
            mapping.unmapped[before.key] = f"batch norm {after.key} folded into its node {node}"
        elif has_after and not has_before:
            node = graph.node[mapping.producers[after.key]].name
            mapping.notes[after.key] = f"fused with {before.key} into {node}"
            mapping.unmapped[before.key] = f"fused into {node} (compared at {after.key})"
        elif (
            has_before
            and has_after
            and not any(
                graph.node[i].op_type == "BatchNormalization" for i in members.get(after.key, [])
            )
        ):  # the norm left no node of its own (folded) but a node inside it (timm's
            # BatchNormAct2d runs its activation): the conv's tensor already holds the norm
            node = graph.node[mapping.producers.pop(before.key)].name
            mapping.tensors.pop(before.key)
            mapping.unmapped[before.key] = (
                f"batch norm {after.key} folded into its node {node}: compared at {after.key}"
            )
