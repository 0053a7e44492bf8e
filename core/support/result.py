"""The op-support jobs' typed results: the registries' and the measured matrix's cache files,
the live TensorRT parser's verdict on a model and its importers, a sample's aten ops. The
parser's findings live here (not in ``trt``) because the support room reads them: the live
parser target is a support target, and ``trt`` is the room above."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.results import Evidence, Result, Verdict, judged


@dataclass
class CachedFile(Result):
    """A cache file the worker built or found for its own interpreter."""

    FILES = ("path",)

    path: str  # "" when only a cached one was asked for and there is none
    cached: bool  # it was there already


@dataclass
class RegistryCache(CachedFile):
    """``support.collect``: the registries (ONNX spec, exporters, ONNX Runtime kernels)."""


@dataclass
class MeasuredCache(CachedFile):
    """``support.measured``: the measured matrix (TensorRT-RTX and ONNX Runtime, per cell)."""


@dataclass
class ParserFinding:
    """One error a TensorRT ONNX parser reported, with the fix ``trt.findings.explain`` names."""

    node_name: str
    op: str
    code: str  # the parser's ErrorCode name: UNSUPPORTED_NODE, INVALID_NODE …
    message: str
    plugin_searched: list[dict[str, str]] = field(default_factory=list)  # name/version/namespace
    fix: str = ""
    node: int = -1  # the node's index in the graph; -1 for a model-level error

    @property
    def plugin_not_found(self) -> bool:
        return "plugin not found" in self.message.lower()

    def __str__(self) -> str:
        where = f"{self.node_name} ({self.op})" if self.node_name else self.op or "model"
        return f"{where}: {self.message} [{self.code}]" + (f" — {self.fix}" if self.fix else "")


@dataclass
class ParserProbe(Result):
    """``support.tensorrt_probe``: the installed parser's verdict on a model (a real parse), with
    its partition where the release reports one."""

    version: str
    product: str
    supported: bool  # the parse succeeded
    findings: list[ParserFinding] = field(default_factory=list)
    unsupported_nodes: list[str] = field(default_factory=list)
    api: str = ""  # which parser calls answered ("parse_from_file + supports_model_v2")
    partitions: list[list[str]] = field(default_factory=list)  # runs of nodes that parsed
    outside_partitions: list[str] = field(default_factory=list)
    ops_without_importer: list[str] = field(default_factory=list)  # 11.x: no partition API
    nodes: int = 0  # the model's top-level nodes the parse went over (what "OK" stands on)

    def summary(self, target: str) -> str:
        """The verdict as ``deploylens support --target TARGET`` says it: OK, or each finding
        with its fix."""
        head = f"{target} ({self.product} {self.version}, its ONNX parser): "
        lines = [head + ("OK" if self.supported else "BLOCKED")]
        for f in self.findings:
            lines.append(f"  ✗ {f.node_name or 'model'} ({f.op}) [{f.code}]: {f.message}")
            lines += [f"      fix: {f.fix}"] if f.fix else []
        return "\n".join(lines)

    def verdict(self) -> Verdict:
        """OK over the nodes parsed (a graph of none is INCONCLUSIVE), else what blocks."""
        none = "" if self.nodes else "the graph has no node"
        evidence = Evidence(self.nodes, "node(s) parsed", none)
        if self.supported:
            return judged(evidence, f"{self.product} {self.version} parses every node", "pass")
        return judged(
            evidence,
            f"{self.product} {self.version} cannot parse {len(self.unsupported_nodes)} node(s)",
            "fail",
        )


@dataclass(frozen=True)
class RegisteredPlugin:
    """A plugin creator in an installed TensorRT's registry."""

    name: str
    version: str
    namespace: str = ""


def plugin_list(plugins: list[RegisteredPlugin]) -> str:
    """ "ROIAlign_TRT v2, …" (or "none"): what a registry holds, as every message says it."""
    return ", ".join(f"{p.name} v{p.version}" for p in plugins) or "none"


@dataclass
class OperatorImporters(Result):
    """``support.tensorrt_ops``: which ONNX op types the installed parser has an importer for,
    and the plugins its registry holds (None: it could not be asked)."""

    product: str
    version: str
    ops: dict[str, bool]
    plugins: list[RegisteredPlugin] | None = None


@dataclass
class SampleAtenOps(Result):
    """``support.sample_aten``: the aten ops a bundled sample calls (a torch.export dry run)."""

    sample: str
    ops: dict[str, int]  # aten op → calls
