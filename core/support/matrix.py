"""The support matrix: one object answering "does this op work here?" for every backend."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploylens.core.model.domains import domain_name
from deploylens.core.support import onnx_spec
from deploylens.core.support.onnx_spec import OpHistory, OpVersion
from deploylens.core.support.tensorrt_table import (
    CAST_DOWN,
    PARSER_DOMAINS,
    TRT_TYPE_NAMES,
    casts_int64_down,
    lookup,
    row_types,
    shipped_plugins,
    table_for,
)

YES, NO, UNKNOWN = "yes", "no", "unknown"
# Ops ONNX Runtime resolves while loading the graph, without a kernel.
GRAPH_LEVEL_OPS = {("ai.onnx", "Constant"): "folded into an initializer when the model loads"}


@dataclass(frozen=True)
class Verdict:
    status: str  # YES / NO / UNKNOWN
    reason: str = ""
    # (low, high) when the only thing wrong is the model's opset, outside what the release
    # parses: a whole-model limit that no plugin or per-op change lifts
    parses: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.status == YES


def tensor_type(dtype: str | None) -> str | None:
    """``float32`` → ``tensor(float)``, the spelling of ONNX type constraints."""
    if dtype is None or dtype == "?":
        return None
    names = {"float32": "float", "float64": "double"}
    return f"tensor({names.get(dtype, dtype)})"


class SupportMatrix:
    def __init__(self, data: dict[str, Any], plugins: dict[str, Any] | None = None) -> None:
        self.data = data
        self.plugins = plugins or {}  # OpPlugin by name: they add rows and implementations
        self.spec: dict[tuple[str, str], OpHistory] = onnx_spec.histories_from(data["spec"])
        self.max_opset: dict[str, int] = data["spec"]["max_opset"]
        self.torchscript = data["torchscript"]
        self.dynamo = data["dynamo"]
        self.ort = data["ort"]
        self.kernels: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for kernel in self.ort.get("kernels", []):
            self.kernels.setdefault((kernel["domain"], kernel["op"]), []).append(kernel)

    @classmethod
    def load(cls, path: str | Path) -> SupportMatrix:
        """The registries the worker collected, read back guarded and checked."""
        from deploylens.core.support.collect import read_registries

        return cls(read_registries(path))

    # -- ONNX spec -----------------------------------------------------------------------------
    def history(self, domain: str, op: str) -> OpHistory | None:
        return self.spec.get((domain_name(domain), op))

    def ops(self) -> list[tuple[str, str]]:
        keys = set(self.spec) | set(self.kernels)
        for plugin in self.plugins.values():
            for name in plugin.onnx_ops:
                domain, _, op = name.rpartition("::")
                keys.add((domain_name(domain), op))
        return sorted(keys)

    def plugin_for(self, domain: str, op: str) -> Any:
        wanted = f"{domain}::{op}" if domain not in ("", "ai.onnx") else op
        for plugin in self.plugins.values():
            if wanted in plugin.onnx_ops:
                return plugin
        return None

    # -- ONNX Runtime --------------------------------------------------------------------------
    @property
    def ort_max_opset(self) -> int:
        """The newest default-domain opset ORT registered kernels for (its spec's horizon)."""
        starts = [k["start"] for k in self.ort.get("kernels", []) if k["domain"] == "ai.onnx"]
        return max(starts) if starts else 0

    @property
    def ort_providers(self) -> list[str]:
        found = {k["provider"] for k in self.ort.get("kernels", [])}
        return sorted(found, key=lambda p: (p != "CPUExecutionProvider", p))

    def ort_verdict(
        self,
        domain: str,
        op: str,
        opset: int,
        provider: str = "CPUExecutionProvider",
        types: dict[str, str | None] | None = None,
    ) -> Verdict:
        """Is there a kernel for this op at this opset (and these input types) in ``provider``?

        ``types`` maps the schema's formal input names to ``tensor(...)`` type strings.
        """
        if not self.ort.get("available"):
            return Verdict(UNKNOWN, self.ort.get("reason", "onnxruntime not found"))
        domain = domain_name(domain)
        history = self.history(domain, op)
        version: OpVersion | None = history.resolve(opset) if history else None
        since = version.since if version else opset
        candidates = [k for k in self.kernels.get((domain, op), []) if k["provider"] == provider]
        # ORT's rule: an open-ended kernel serves only the version it was registered for;
        # a versioned kernel serves its whole range.
        in_range = [
            k
            for k in candidates
            if k["start"] == since or (k["end"] is not None and k["start"] <= since <= k["end"])
        ]
        if (domain, op) in GRAPH_LEVEL_OPS:
            return Verdict(YES, GRAPH_LEVEL_OPS[(domain, op)])
        if domain == "ai.onnx" and opset > self.ort_max_opset:
            return Verdict(
                NO,
                f"ONNX Runtime {self.ort.get('version')} knows opsets up to "
                f"{self.ort_max_opset}; the model uses {opset}",
            )
        if history is not None and version is None:
            first = history.versions[0].since
            return Verdict(NO, f"{op} does not exist at {domain} opset {opset} (from {first})")
        if not in_range:
            if version is not None and version.has_function:
                return self._function_verdict(version, op, opset, provider)
            if candidates:
                ranges = ", ".join(f"{k['start']}-{k['end'] or '…'}" for k in candidates)
                return Verdict(
                    NO,
                    f"no {provider} kernel for {op} version {since} "
                    f"(kernels cover versions {ranges})",
                )
            plugin = self.plugin_for(domain, op)
            if plugin is not None and plugin.register_ort_reference is not None:
                return Verdict(
                    YES,
                    f"through plugin '{plugin.name}': its reference "
                    "implementation (onnxruntime-extensions PyOp)",
                )
            return Verdict(NO, f"{provider} has no kernel for {domain}::{op}")
        if not types or version is None:
            return Verdict(YES)
        bound = self._bind_types(version, types)
        if self._kernel_for(in_range, bound):
            return Verdict(YES)
        if provider == "CPUExecutionProvider" and "tensor(float16)" in bound.values():
            widened = {
                k: ("tensor(float)" if v == "tensor(float16)" else v) for k, v in bound.items()
            }
            if self._kernel_for(in_range, widened):
                return Verdict(YES, "no float16 kernel: ONNX Runtime inserts Casts to float")
        wanted = ", ".join(f"{k}={v}" for k, v in bound.items() if v)
        return Verdict(NO, f"no {provider} kernel for {op} with {wanted}")

    def _function_verdict(self, version: OpVersion, op: str, opset: int, provider: str) -> Verdict:
        """No kernel: ONNX Runtime inlines the function body, which must run itself."""
        for domain, inner in version.function_ops:
            if (domain, inner) == ("ai.onnx", op):
                continue
            verdict = self.ort_verdict(domain, inner, opset, provider)
            if not verdict.ok:
                return Verdict(
                    NO, f"no kernel for {op}, and its function body needs {inner}: {verdict.reason}"
                )
        return Verdict(YES, "no kernel, but ONNX Runtime expands its function body")

    @staticmethod
    def _kernel_for(kernels: list[dict[str, Any]], bound: dict[str, str | None]) -> bool:
        return any(
            all(
                bound.get(name) is None or bound[name] in allowed
                for name, allowed in kernel["types"].items()
            )
            for kernel in kernels
        )

    @staticmethod
    def _bind_types(version: OpVersion, types: dict[str, str | None]) -> dict[str, str | None]:
        """Constraint name → actual type, from the node's formal inputs (and outputs)."""
        bound: dict[str, str | None] = {}
        for name, type_str in [*version.inputs, *version.outputs]:
            if type_str in version.type_constraints and types.get(name):
                bound.setdefault(type_str, types[name])
        return bound

    # -- TensorRT --------------------------------------------------------------------------------
    def trt_verdict(
        self, domain: str, op: str, opset: int, version: str, dtypes: list[str] | None = None
    ) -> Verdict:
        used, table, warning = table_for(version)
        prefix = f"{warning}; " if warning else ""
        domain = domain_name(domain)
        row = lookup(table, op)
        # the parser imports by op type: a native importer first (a trt.plugins node with one is
        # a native layer: LayerNormalization, Gelu), else a plugin of that name in the registry
        if row is None or domain not in PARSER_DOMAINS:
            return self._trt_plugin_verdict(domain, op, used, prefix)
        if row["supported"] != "Y" and op in shipped_plugins():
            return self._trt_plugin_verdict(domain, op, used, prefix)
        history = self.history(domain, op) if domain == "ai.onnx" else None
        if history is not None and history.resolve(opset) is None:
            return Verdict(
                NO, f"{op} does not exist at opset {opset} (from {history.versions[0].since})"
            )
        low, high = table["opset_range"]
        if domain == "ai.onnx" and high and opset < low:
            prefix += (
                f"TensorRT {used} documents opsets {low}-{high}: the parser reads opset {opset} "
                "with a warning; "
            )
        elif domain == "ai.onnx" and high and opset > high:
            return Verdict(
                NO,
                f"{prefix}TensorRT {used} parses opsets {low}-{high}, the model uses {opset}",
                parses=(int(low), int(high)),
            )
        if row["supported"] != "Y":
            note = f": {row['restrictions']}" if row["restrictions"] else ""
            return Verdict(NO, f"{prefix}TensorRT {used} does not support {op}{note}")
        cast_note = ""
        allowed = row_types(row)
        if dtypes and allowed:
            wanted = {TRT_TYPE_NAMES.get(d, d) for d in dtypes}
            if casts_int64_down(used):
                cast = {t for t in wanted if t in CAST_DOWN and CAST_DOWN[t] in allowed}
                if cast:
                    cast_note = "; " + ", ".join(
                        f"{t} is cast down to {CAST_DOWN[t]} (values clamped)" for t in sorted(cast)
                    )
                wanted = (wanted - cast) | {CAST_DOWN[t] for t in cast}
            bad = sorted(wanted - allowed - {"?"})
            if bad:
                return Verdict(
                    NO,
                    f"{prefix}TensorRT {used} supports {op} for {', '.join(sorted(allowed))}, "
                    f"not {', '.join(bad)}",
                )
        note = f" (restriction: {row['restrictions']})" if row["restrictions"] else ""
        return Verdict(YES, f"{prefix}{note}{cast_note}".strip("; ").strip())

    def _trt_plugin_verdict(self, domain: str, op: str, used: str, prefix: str) -> Verdict:
        """A node the parser has no native importer for: it looks the op type up as a plugin.
        One TensorRT's own plugin library ships is fine (trtexec and DeployLens load it); one a
        DeployLens plugin declares needs that library; anything else needs a plugin written."""
        shipped = shipped_plugins().get(op)
        if shipped is not None:
            versions = ", ".join(shipped["versions"])
            return Verdict(
                YES,
                f"{prefix}a plugin TensorRT's plugin library ships ({op}, version {versions}"
                + (", deprecated" if shipped["deprecated"] else "")
                + "): loaded with init_libnvinfer_plugins, as trtexec does",
            )
        plugin = self.plugin_for(domain, op)
        ref = (plugin.tensorrt_plugin_for(op) or {}) if plugin is not None else {}
        if plugin is not None and ref:
            return Verdict(
                UNKNOWN,
                f"{prefix}needs TensorRT plugin {ref.get('name')} v{ref.get('version')} "
                f"({ref.get('library')}), declared by DeployLens plugin '{plugin.name}'",
            )
        where = f"{domain}::{op}" if domain != "ai.onnx" else op
        return Verdict(
            NO,
            f"{prefix}{where} is not in TensorRT {used}'s operator table and no plugin of that "
            "name ships with TensorRT: it needs a plugin",
        )

    # -- PyTorch exporters ------------------------------------------------------------------------
    def torchscript_opsets(self, aten: str) -> list[int] | None:
        if not self.torchscript.get("available"):
            return None
        result: list[int] | None = self.torchscript["ops"].get(aten, [])
        return result

    def dynamo_overloads(self, aten: str) -> list[str] | None:
        if not self.dynamo.get("available"):
            return None
        result: list[str] | None = self.dynamo["ops"].get(aten, [])
        return result
