"""The ``trace.profile`` request: run a model under a profiler and write a trace — what
``deploylens profile`` and the Timeline's "Profile" dialog fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal

from deploylens.core.requests import Request, flag

Backend = Literal["ort", "torch", "trt"]
BACKENDS: tuple[str, ...] = ("ort", "torch", "trt")


@dataclass
class ProfileRequest(Request):
    JOB: ClassVar[str] = "trace.profile"
    COMMAND: ClassVar[str] = "profile"

    model: str  # ort: an ONNX file; torch: an export spec; trt: an engine file
    out: str  # the trace file (Chrome JSON)
    backend: Backend = "ort"
    streams: int = 2  # CUDA streams (torch on a GPU)
    iterations: int = 20
    device: str = ""  # torch device; "": cuda when available

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("the capture")
        group.add_argument(
            "model",
            help="ort: FILE.onnx; torch: an export spec (torchvision:NAME, FILE.py:f, …); "
            "trt: FILE.engine",
        )
        group.add_argument("--backend", choices=BACKENDS, default="ort")
        group.add_argument("--streams", type=int, default=2, help="CUDA streams (torch on a GPU)")
        group.add_argument("--iterations", type=int, default=20)
        group.add_argument("--device", default="", help="torch device (default: cuda when there)")
        group.add_argument("--out", type=Path, required=True, help="trace file to write (.json)")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ProfileRequest:
        return cls(
            model=args.model,
            out=str(args.out),
            backend=args.backend,
            streams=args.streams,
            iterations=args.iterations,
            device=args.device or "",
        )

    def cli_args(self) -> list[str]:
        args = [self.model, "--out", self.out]
        flag(args, "--backend", self.backend, "ort")
        flag(args, "--streams", self.streams, 2)
        flag(args, "--iterations", self.iterations, 20)
        flag(args, "--device", self.device, "")
        return args

    def prepared(self) -> ProfileRequest:
        """File paths absolute (a torch spec is the export spec, left as given)."""
        model = self.model if self.backend == "torch" else str(Path(self.model).resolve())
        return replace(self, model=model, out=str(Path(self.out).resolve()))
