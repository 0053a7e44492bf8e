"""The measured matrix as typed values: what one library said of one probe (``CellAnswer``), a
library's answers (``LibraryAnswers``), the probe job's whole answer and cache file
(``MeasuredMatrix``), an op's row (``MeasuredRow``) and a model's prediction (``Prediction``).

The cache file keeps the JSON it had (schema 6): these classes read it strictly, so a cell
without a state, or a misspelt key, is an error where the file is read — not a ``KeyError`` in
the Support panel's table or a prediction that silently skips the cell.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from deploylens.core.results import EXIT_INCONCLUSIVE, Evidence, Result, Verdict, judged
from deploylens.core.support.result import RegisteredPlugin, plugin_list
from deploylens.core.typed import AsDict

TRT_OK = ("builds",)
# The targets predicted from the measured cells without a parse (CLI ``--target``, the panel's
# "(measured)" entries), and the question each asks of a node's cell. Here, not in ``measure``:
# a live-parser ``support`` run reads it and need not import the measuring code (0.03 s).
MEASURED_LEVELS = {"trt-rtx-measured": "trt-build", "ort-cpu-measured": "ort-run"}
ORT_OK = ("runs", "loads")
# Each library's own states (and the worker's, which either may end in): a node is judged for a
# target only in that target's states — a cell in another library's state is a bug, never fine.
DIED_STATES = ("crashed", "exited", "disconnected", "not measured")
STATES = {
    "trt": ("builds", "build-fails", "parse-fails", "io-type", "needs-profile", "needs-gpu",
            "plugin-not-registered", *DIED_STATES),
    "ort": ("runs", "loads", "run-fails", "session-fails", *DIED_STATES),
}  # fmt: skip


@dataclass(frozen=True)
class CellAnswer:
    """What one library said of one probe: its state ("builds", "parse-fails", "runs",
    "session-fails", "crashed", "io-type", …), its own words, and the parser's error code."""

    state: str
    message: str = ""
    code: str = ""


NOT_MEASURED = CellAnswer("not measured")


@dataclass
class LibraryAnswers:
    """One library's answers by cell key (``ai.onnx::Mod::13::float``); ``variants`` by
    ``cell@signature``; ``runtime``: TensorRT's answers where a constant-only input is fed at
    run time instead."""

    cells: dict[str, CellAnswer] = field(default_factory=dict)
    variants: dict[str, CellAnswer] = field(default_factory=dict)
    runtime: dict[str, CellAnswer] = field(default_factory=dict)
    product: str = ""  # "TensorRT-RTX" (ONNX Runtime's is implied)
    version: str = ""  # "" where it is not installed
    missing: str = ""  # why it could not be asked
    # TensorRT: which default-domain op types the parser has an importer for, and the plugin
    # creators its registry holds (None: not asked) — what a node of another domain meets
    importers: dict[str, bool] = field(default_factory=dict)
    plugins: list[RegisteredPlugin] | None = None

    def merge(self, other: LibraryAnswers) -> None:
        """``other``'s answers joined to these (a crash-halving's second half)."""
        self.cells.update(other.cells)
        self.variants.update(other.variants)
        self.runtime.update(other.runtime)
        self.importers.update(other.importers)
        self.product = self.product or other.product
        self.version = self.version or other.version
        self.missing = self.missing or other.missing
        self.plugins = self.plugins if self.plugins is not None else other.plugins

    def plugin_answer(self, op: str) -> CellAnswer | None:
        """What the parser does with a node of a domain it has no importers for (a custom op):
        it looks the op type up as a plugin. Not registered and no importer of that name: it
        fails ("Plugin not found") unless a plugin library registers it. None where the
        registry was not asked, or holds the op, or an importer of that name exists: then only
        a parse can tell."""
        if self.plugins is None or self.importers.get(op) or not self.importers:
            return None
        if any(plugin.name == op for plugin in self.plugins):
            return None
        held = plugin_list(self.plugins)
        return CellAnswer(
            "plugin-not-registered",
            f"{self.product or 'TensorRT'} has no importer for {op} and its plugin registry no "
            f"creator of that name (it holds: {held}): the parser fails with 'Plugin not found' "
            "unless a plugin library registers it",
        )

    def states(self) -> Counter[str]:
        return Counter(cell.state for cell in self.cells.values())


@dataclass
class MeasuredMatrix(Result):
    """``support.measure``: every probed cell on TensorRT-RTX and ONNX Runtime CPU, the cells no
    valid probe could be made for (``unprobed``, with why), and which ONNX test case each probe
    came from. The same fields are the measured cache file."""

    trt: LibraryAnswers = field(default_factory=LibraryAnswers)
    ort: LibraryAnswers = field(default_factory=LibraryAnswers)
    unprobed: dict[str, str] = field(default_factory=dict)
    seeds: dict[str, str] = field(default_factory=dict)  # cell → the test case it came from
    signatures: dict[str, str] = field(default_factory=dict)  # cell → its probe's attributes
    variant_seeds: dict[str, list[str]] = field(default_factory=dict)  # variant → its cases
    versions: dict[str, str] = field(default_factory=dict)  # what the cache is keyed by
    seconds: float = 0.0  # how long measuring took
    cached: bool = False  # read from the cache (set on reading; False in the file)

    def library(self, lib: str) -> LibraryAnswers:
        """``trt`` or ``ort``."""
        return self.trt if lib == "trt" else self.ort

    def merge(self, other: MeasuredMatrix) -> MeasuredMatrix:
        """Two halves' answers as one (the crash-cornering driver's)."""
        self.trt.merge(other.trt)
        self.ort.merge(other.ort)
        self.unprobed.update(other.unprobed)
        self.seeds.update(other.seeds)
        self.signatures.update(other.signatures)
        self.variant_seeds.update(other.variant_seeds)
        return self

    def trt_name(self) -> str:
        return f"{self.trt.product or 'TensorRT-RTX'} {self.trt.version or '(not installed)'}"

    def ort_version(self) -> str:
        return self.ort.version or "(not installed)"

    def summary_text(self) -> str:
        trt, ort = self.trt.states(), self.ort.states()
        took = "cached" if self.cached else f"measured in {self.seconds:.0f} s"
        domains = Counter(k.split("::")[0] for k in self.trt.cells or self.ort.cells)
        return "\n".join(
            [
                f"measured support matrix ({self.versions.get('probes', '?')} probe set; {took})",
                "  probes by domain: " + ", ".join(f"{d} {n}" for d, n in sorted(domains.items())),
                f"  not probed: {len(self.unprobed)} cells (no valid one-node model; "
                "reasons in --json)",
                "  TensorRT-RTX: " + ", ".join(f"{s} {n}" for s, n in trt.most_common()),
                "  ONNX Runtime CPU: " + ", ".join(f"{s} {n}" for s, n in ort.most_common()),
                f"  attribute variants: {len(self.trt.variants)} (an op's other attribute sets, "
                "at one type per class)",
            ]
        )

    def status_line(self) -> str:
        """What the Support panel's status says of it."""
        return (
            f"measured here ({self.versions.get('probes', '?')} probe set, "
            f"{len(self.trt.cells)} probes): {self.trt_name()} and ONNX Runtime "
            f"{self.ort_version()} CPU"
        )


@dataclass(frozen=True)
class MeasuredCell:
    """One (opset, type) of an op's row, or one of its attribute variants (``signature``)."""

    since: int
    dtype: str
    tensorrt_rtx: CellAnswer
    ort_cpu: CellAnswer
    probe: str = ""  # the ONNX test case it came from
    signature: str = ""  # a variant's attributes ("" for the type's own cell)


@dataclass
class MeasuredRow(AsDict):
    """``deploylens support --op NAME --measured``: an op's cells and what each library said."""

    op: str
    domain: str
    tensorrt_rtx: str
    onnxruntime: str
    target: str
    cells: list[MeasuredCell]
    variants: list[MeasuredCell]
    not_probed: dict[str, str]  # "since::dtype" → why no probe could be made

    def text(self) -> str:
        """The row as a table, each refusal followed by the library's own words."""
        head = (
            f"{self.op} ({self.domain}), measured: {self.tensorrt_rtx} (parse, then an "
            f"ahead-of-time build for {self.target}) and ONNX Runtime {self.onnxruntime} CPU "
            "(session, then one run)"
        )
        if not self.cells and not self.not_probed:
            return (
                head + "\n  no cells: not an op of the probed domains, or not in this quick sample"
            )
        lines = [head, f"  {'opset':>5}  {'type':14s} {'TensorRT-RTX':13s} ONNX Runtime CPU"]
        for cell in self.cells:
            trt, ort = cell.tensorrt_rtx, cell.ort_cpu
            lines.append(f"  {cell.since:>5}  {cell.dtype:14s} {trt.state:13s} {ort.state}")
            for name, said in (("TensorRT-RTX", trt), ("ONNX Runtime", ort)):
                if said.state not in TRT_OK + ORT_OK and said.message:
                    code = f" [{said.code}]" if said.code else ""
                    lines.append(f"           {name}{code}: {said.message[:160]}")
        if self.variants:
            lines.append(
                "  attribute variants (the other attribute sets of ONNX's test cases, at one "
                "type per class):"
            )
            for variant in self.variants:
                trt, ort = variant.tensorrt_rtx, variant.ort_cpu
                lines.append(
                    f"  {variant.since:>5}  {variant.dtype:14s} {trt.state:13s} "
                    f"{ort.state:13s} {variant.signature}"
                )
        for cell_key, why in sorted(self.not_probed.items()):
            lines.append(f"  not probed {cell_key.replace('::', ' ')}: {why}")
        return "\n".join(lines)


@dataclass(frozen=True)
class NodeAnswer:
    """What a model's node gets from its measured cell."""

    node: str
    cell: str  # the cell key, a variant's with its @signature; "model" for a whole-model problem
    runtime: bool
    state: str
    message: str = ""


@dataclass
class Prediction(AsDict):
    """A model judged from the measured cells: ``ok`` is None where a node's cell was not
    measured, so a guess is never passed off as a measurement."""

    ok: bool | None
    blocked: list[NodeAnswer]
    not_measured: list[NodeAnswer]
    nodes: int
    source: str = ""  # "measured cells: TensorRT-RTX 1.x, full probe set"

    def verdict(self) -> Verdict:
        """OK over the nodes whose measured cells answered; BLOCKED; INCONCLUSIVE (exit 3)
        where a node's cell was not measured or the model has no node."""
        answered = self.nodes - len(self.not_measured)
        evidence = Evidence(
            answered,
            "node(s) with a measured answer",
            f"{len(self.not_measured)} node(s) not measured" if self.not_measured else "",
        )
        if self.ok:
            return judged(evidence, "OK", "pass")
        if self.ok is False:
            return judged(evidence, "BLOCKED", "fail")
        return Verdict("INCONCLUSIVE", "warn", EXIT_INCONCLUSIVE, evidence)

    def text(self, target: str) -> str:
        """OK / BLOCKED / INCONCLUSIVE (a node with no measured cell: never passed as fine)."""
        if self.ok:
            head = f"OK: every node's measured cell passes ({self.nodes} nodes)"
        elif self.ok is False:
            head = f"BLOCKED: {len(self.blocked)} node(s) whose measured cell fails"
        else:
            head = (
                f"INCONCLUSIVE: {len(self.not_measured)} node(s) have no measured cell; "
                "ask the live parser (--target trt-rtx) or run the model"
            )
        lines = [f"{target} (predicted from the {self.source}): {head}"]
        for node in self.blocked[:20]:
            said = f" — {node.message[:140]}" if node.message else ""
            lines.append(f"  {node.node} ({node.cell}): {node.state}{said}")
        for node in self.not_measured[:10]:
            why = f" — {node.message[:100]}" if node.message else ""
            lines.append(f"  not measured: {node.node} ({node.cell}){why}")
        return "\n".join(lines)
