"""The ``build.engine`` job's typed result: the engine written (and its layers), or every
parser finding with its fix — the CLI's text and exit code and the Build panel's banner."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from deploylens.core.results import Evidence, Result, Verdict, judged
from deploylens.core.support.result import ParserFinding


@dataclass
class BuildResult(Result):
    FILES = ("engine", "layers_json")

    built: bool
    tensorrt: str  # the installed release's version
    product: str  # "TensorRT" | "TensorRT-RTX"
    log: list[str] = field(default_factory=list)  # the builder's INFO-and-above lines
    message: str = ""  # why nothing was built
    findings: list[ParserFinding] = field(default_factory=list)
    engine: str = ""
    engine_bytes: int = 0
    seconds: float = 0.0
    layers_json: str = ""  # the engine's layer information, saved beside it
    layers_source: str = ""  # "IEngineInspector", or the builder log for an ahead-of-time plan
    layers: int = 0
    phases: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what the build decided unasked
    targets: list[str] = field(default_factory=list)  # TensorRT-RTX: compute capabilities
    targets_named: bool = False  # False: TensorRT-RTX's default targets

    def verdict(self) -> Verdict:
        """Built: a plan of bytes on disk (an empty plan is no plan); else the builder's cause."""
        evidence = Evidence(1 if self.engine_bytes > 0 else 0, "plan(s) written", "" if self.built
                            else self.message)  # fmt: skip
        if not self.built:
            return judged(evidence, self.message, "fail")
        if not self.engine_bytes:
            return judged(replace(evidence, missing="the builder wrote an empty plan"), "", "pass")
        where = f", ahead of time for {', '.join(self.targets)}" if self.targets else ""
        return judged(
            evidence,
            f"Built {self.engine} ({self.engine_bytes / 1e6:.1f} MB, {self.product} "
            f"{self.tensorrt}, {self.seconds:.1f} s{where})",
            "pass",
        )

    def finding_lines(self) -> list[str]:
        """Each parser finding, where and why, with its fix."""
        return [
            f"{f.node_name or 'model'} ({f.op}) [{f.code}]: {f.message}"
            + (f" — fix: {f.fix}" if f.fix else "")
            for f in self.findings
        ]

    def summary(self) -> str:
        """The build's outcome in words: the engine, or every parser finding with its fix."""
        if not self.built:
            return "\n".join([self.message, *(f"  ✗ {line}" for line in self.finding_lines())])
        text = (
            f"built {self.engine} ({self.engine_bytes / 1e6:.1f} MB) with "
            f"{self.product} {self.tensorrt} in {self.seconds:.2f} s"
        )
        if self.targets:
            named = "" if self.targets_named else " (TensorRT-RTX's default targets)"
            text += f", ahead of time for {', '.join(self.targets)}{named}"
        if self.layers_json:
            text += f"; {self.layers} layer(s): {self.layers_json}"
            if self.layers_source and self.layers_source != "IEngineInspector":
                text += f"\n  (layers from the {self.layers_source})"
        warnings = [line for line in self.log if line.startswith("[warning] could not")]
        text += "".join(f"\n  {line[10:]}" for line in warnings)
        text += "".join(f"\n  notice: {notice}" for notice in self.notices)
        return text
