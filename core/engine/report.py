"""The engine view's answers as typed rows: a layer, a breakdown's share, the summary TREx's
first page gives, and the diff of two engines. The Engine panel, ``deploylens engine`` (its
text and ``--json``) and the tests read fields, so a renamed key is a type error, not an
empty cell."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.typed import AsDict


@dataclass(frozen=True)
class LayerRow(AsDict):
    """One engine layer, in the order TensorRT runs them, with its profiled time."""

    index: int  # 1-based engine order
    name: str
    type: str
    kind: str  # the summary's grouping ("Reformat (Q/DQ)", "Convolution", …)
    in_precision: str
    out_precision: str
    in_formats: list[str]
    out_formats: list[str]
    tactic: str
    onnx_nodes: list[str]
    region: str  # "ForeignNode[…]" for a Myelin region, else ""
    reformat: bool
    time_ms: float | None  # None: no profile, or the profile does not name it
    percent: float | None

    def formats(self) -> str:
        """The "in → out" formats, each side's distinct formats once."""
        sides = (self.in_formats, self.out_formats)
        return " → ".join(filter(None, ("/".join(dict.fromkeys(side)) for side in sides)))


@dataclass
class Share(AsDict):
    """One row of a breakdown (by layer type, by precision): its layers and their time."""

    name: str
    layers: int = 0
    ms: float = 0.0
    percent: float | None = None  # of the profiled total (None: no profile)


@dataclass
class EngineSummary(AsDict):
    path: str
    layers: int
    detailed: bool
    timed: bool
    total_ms: float | None
    by_type: list[Share]  # the types past the first few fold into "other (N types)"
    by_precision: list[Share]
    reformat_layers: int  # equals the by-type "Reformat" row
    reformat_ms: float | None
    regions: int
    slowest: list[LayerRow]


@dataclass(frozen=True)
class FusionChange(AsDict):
    """ONNX nodes one engine fused into layer ``a`` and the other into layer ``b``."""

    a: str
    b: str
    nodes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PrecisionChange(AsDict):
    a: str
    b: str
    before: str  # layer a's output precision
    after: str  # layer b's


@dataclass(frozen=True)
class TimeDelta(AsDict):
    layer: str
    a_ms: float
    b_ms: float
    delta_ms: float


@dataclass
class TimeDeltas(AsDict):
    total_a_ms: float
    total_b_ms: float
    common: list[TimeDelta]  # layers both profiles time, largest change first
    only_a_ms: float
    only_b_ms: float


@dataclass
class EngineDiff(AsDict):
    """What changed from engine ``a`` to engine ``b``."""

    added: list[str]
    removed: list[str]
    fused_differently: list[FusionChange]
    precision_changes: list[PrecisionChange]
    onnx_only_in_a: list[str]
    onnx_only_in_b: list[str]
    # None unless both sides have a profile: one side without would read as "all faster"
    times: TimeDeltas | None = None

    def text(self, top: int = 10) -> str:
        lines = [
            f"layers added {len(self.added)}, removed {len(self.removed)}, fused differently "
            f"{len(self.fused_differently)}, precision changes {len(self.precision_changes)}"
        ]
        lines += [f"  fusion: {item.a}  →  {item.b}" for item in self.fused_differently[:top]]
        lines += [
            f"  precision {item.before} → {item.after}: {item.b}"
            for item in self.precision_changes[:top]
        ]
        if self.times:
            t = self.times
            lines.append(
                f"  total {t.total_a_ms:.4f} ms → {t.total_b_ms:.4f} ms "
                f"({t.total_b_ms - t.total_a_ms:+.4f} ms)"
            )
            lines += [f"    {row.delta_ms:+9.4f} ms  {row.layer[:70]}" for row in t.common[:top]]
        return "\n".join(lines)
