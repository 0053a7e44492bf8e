"""The ``env.probe`` job's typed result: the worker interpreter, the packages DeployLens uses
(and the line that installs a missing one), the CUDA driver, and torch's own view of CUDA —
what ``deploylens env``, Help → Environment, Preferences' interpreter check and the demo
report say."""

from __future__ import annotations

from dataclasses import dataclass, field

from deploylens.core.results import Result
from deploylens.core.worker.probe import install_line, needs_given


@dataclass
class PythonInfo:
    version: str
    version_info: list[int]
    executable: str
    implementation: str
    platform: str
    machine: str
    host: str  # which machine answered: a remote worker says so


@dataclass
class PackageInfo:
    version: str | None  # None: not installed
    requirement: str = ""
    purpose: str = ""
    providers: list[str] | None = None  # ONNX Runtime's execution providers


@dataclass
class CudaDriver:
    available: bool
    reason: str = ""  # why there is none
    driver_version: str = ""
    devices: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.available:
            return f"driver {self.driver_version}: {', '.join(self.devices)}"
        return f"none — {self.reason}"


@dataclass
class DeployLensInfo:
    version: str | None
    frozen: bool  # a packaged bundle, not a Python package

    def kind(self) -> str:
        return "packaged bundle" if self.frozen else "Python package"


@dataclass
class TorchView:
    """torch's own view of CUDA (imported in the worker when asked)."""

    version: str = ""
    cuda_build: str | None = None
    cuda_available: bool = False
    devices: list[str] = field(default_factory=list)
    error: str = ""  # a broken torch is a finding, not a crash

    def text(self) -> str:
        return self.error or f"CUDA build {self.cuda_build}, available: {self.cuda_available}"


@dataclass
class Environment(Result):
    python: PythonInfo
    packages: dict[str, PackageInfo]  # import name → what is installed
    cuda_driver: CudaDriver
    deploylens: DeployLensInfo
    torch: TorchView | None = None

    def missing(self) -> list[str]:
        return [name for name, info in self.packages.items() if not info.version]

    def install_line(self, name: str, with_needs: bool = True) -> str:
        """The line that installs ``name`` into this interpreter, with every worker need it
        also lacks (one run, not one failed job per package) unless ``with_needs`` is off."""
        needs = [n for n in self.missing_needs() if n != name] if with_needs else []
        torch = self.packages.get("torch")
        return install_line(
            [name, *needs], self.python.executable, torch.version if torch else None
        )

    def missing_needs(self) -> list[str]:
        """What every worker job needs (``needs_given``) that this interpreter lacks."""
        torch = self.packages.get("torch")
        needs = needs_given(bool(torch and torch.version))
        return [n for n in needs if n in self.packages and not self.packages[n].version]

    def package_text(self, name: str) -> str:
        """ "1.20.1 (CPUExecutionProvider)", or "missing"."""
        info = self.packages[name]
        if info.version and info.providers:
            return f"{info.version} ({', '.join(info.providers)})"
        return info.version or "missing"

    def lines(self) -> list[str]:
        """The report as a Markdown list (``deploylens env``, the demo report)."""
        python = self.python
        where = f" on {python.host}" if python.host else ""
        lines = [
            f"- Python {python.version} ({python.executable}){where}",
            f"- DeployLens {self.deploylens.version or '(its sources, sent to the worker)'} "
            f"({self.deploylens.kind()})",
            f"- CUDA driver: {self.cuda_driver.text()}",
        ]
        for name, info in self.packages.items():
            version = info.version or "not installed"
            extra = f" — providers {', '.join(info.providers)}" if info.providers else ""
            lines.append(f"- {name}: {version}{extra}")
        if self.torch is not None:
            lines.append(f"- torch (imported): {self.torch.version or '?'} — {self.torch.text()}")
        return lines
