"""The ``trace.profile`` request: run a model under a profiler and write a trace — what
``deploylens profile`` and the Timeline's "Profile" dialog fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, cast

from deploylens.core.errors import UserError
from deploylens.core.files import output_path
from deploylens.core.request_parts import (
    Part,
    add_field_arguments,
    cli,
    field_args,
    field_values,
)
from deploylens.core.requests import Request, flag
from deploylens.core.trace.pipeline import MODES, Mode

if TYPE_CHECKING:
    from deploylens.core.trace.capture import CaptureSettings
    from deploylens.core.trace.result import LabResult, ProfileResult, SweepResult  # noqa: F401

Backend = Literal["ort", "torch", "trt"]
BACKENDS: tuple[str, ...] = ("ort", "torch", "trt")
Host = Literal["pinned", "pageable"]
HOSTS: tuple[str, ...] = ("pinned", "pageable")
Executor = Literal["auto", "worker", "ray"]
EXECUTORS = ("auto", "worker", "ray")
CAPTURE, SWEEP, FAN_OUT = "the capture", "the sweep", "where the points run"  # --help sections
SCENARIO = "the scenario"


@dataclass(kw_only=True)
class CaptureLoop(Part):
    """How a capture runs the model, whatever it varies: profile's and sweep's, written once."""

    host_buffers: Host = field(  # the copies' host memory (``--host`` names a machine)
        default="pinned",
        metadata=cli("host memory for the copies (pinned: page-locked)", choices=HOSTS),
    )
    warmup: int = field(default=5, metadata=cli("untimed batches first", type=int))
    iterations: int = field(default=20, metadata=cli("timed batches", type=int))
    device: str = field(  # torch device; "": cuda when available
        default="", metadata=cli("torch device (default: cuda when there)")
    )


@dataclass
class ProfileRequest(Request["ProfileResult"], CaptureLoop):
    FILES: ClassVar[dict[str, str]] = {"model": "in", "out": "out"}

    model: str = field(  # ort: an ONNX file; torch: an export spec; trt: an engine file
        metadata=cli(
            "ort: FILE.onnx; torch: an export spec (torchvision:NAME, FILE.py:f, …); "
            "trt: FILE.engine",
            positional=True,
            group=CAPTURE,
        )
    )
    out: str = field(  # the trace file (Chrome JSON)
        metadata=cli(
            "trace file to write (.json)", path=True, required=True, always=True, group=CAPTURE
        )
    )
    backend: Backend = "ort"  # by hand: its default follows the model
    mode: Mode = field(  # how batches are issued on a GPU (core/trace/pipeline.py)
        default="serial",
        metadata=cli(
            "GPU: serial (H2D → compute → D2H per batch), pipelined (copy streams, the next "
            "batch's H2D before this batch's compute), cudagraph (compute replayed) or "
            "graph-pipelined (both: graphs replayed while the copies run on their own streams)",
            choices=MODES,
            group=CAPTURE,
        ),
    )
    batch: int = field(default=1, metadata=cli("batch size (default 1)", type=int, group=CAPTURE))
    streams: int = field(  # CUDA (compute) streams; ignored on the CPU, and said so
        default=1, metadata=cli("CUDA compute streams (GPU)", type=int, group=CAPTURE)
    )

    def capture(self) -> CaptureSettings:
        from deploylens.core.trace.capture import CaptureSettings

        return CaptureSettings(
            iterations=self.iterations,
            mode=self.mode,
            batch=self.batch,
            streams=self.streams,
            host=self.host_buffers,
            warmup=self.warmup,
        )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(CAPTURE)
        add_field_arguments(cls, group, {CAPTURE: group})  # its fields and CaptureLoop's
        group.add_argument(
            "--backend",
            choices=BACKENDS,
            default=None,
            help="ort, torch or trt (default: from the model: .onnx → ort, .engine/.plan → trt, "
            "a PyTorch source → torch)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ProfileRequest:
        return cls(**field_values(cls, args), backend=args.backend or infer_backend(args.model))

    def cli_args(self) -> list[str]:
        args = field_args(self)  # model, --out, the changed ones; the part's included
        flag(args, "--backend", self.backend, infer_backend(self.model))
        return args

    def check(self) -> None:
        """Numbers no capture can use, and a model the backend cannot take, refused in one
        sentence before a worker starts (an .onnx given to the torch backend skipped all 27
        points of a sweep, which then said it succeeded)."""
        for name in ("batch", "streams", "iterations"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name} must be 1 or more, not {getattr(self, name)}.")
        if self.warmup < 0:
            raise UserError(f"--warmup must be 0 or more, not {self.warmup}.")
        if self.backend == "torch":
            if self.model.lower().endswith(".onnx"):
                raise UserError(
                    f"{Path(self.model).name} is an ONNX model: the torch backend profiles a "
                    "PyTorch source (sample:NAME, torchvision:NAME, FILE.py:factory, .pt, .pt2).",
                    "Profile it with ONNX Runtime: --backend ort (the default for .onnx).",
                )
        elif not self.model.startswith(("sample:", "torchvision:")):
            from deploylens.core.files import input_file

            input_file(self.model, "ONNX model" if self.backend == "ort" else "TensorRT engine")

    def prepared(self) -> ProfileRequest:
        """File paths absolute (a torch spec is the export spec, left as given)."""
        self.check()
        model = self.model if self.backend == "torch" else str(Path(self.model).resolve())
        return replace(self, model=model, out=output_path(self.out))


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"'{text}' is not a list of whole numbers like 1,8,32.") from None
    if not values or any(v < 1 for v in values):
        raise UserError(f"'{text}': give whole numbers of 1 or more, like 1,8,32.")
    return values


def infer_backend(model: str) -> Backend:
    """The backend a model file asks for: ONNX Runtime for .onnx, TensorRT for an engine,
    PyTorch for anything else (an export spec)."""
    lowered = model.lower()
    if lowered.endswith(".onnx"):
        return "ort"
    if lowered.endswith((".engine", ".plan", ".trt")):
        return "trt"
    return "torch"


def _mode_list(text: str) -> list[Mode]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    modes = [v for v in values if v in MODES]
    if len(modes) < len(values) or not values:
        raise UserError(f"'{text}': modes are {', '.join(MODES)} (comma-separated).")
    return cast(list[Mode], modes)


@dataclass
class SweepRequest(Request["SweepResult"], CaptureLoop):
    """One capture per batch × streams × mode point, in one worker (``deploylens sweep``)."""

    FILES: ClassVar[dict[str, str]] = {"model": "in", "out": "outdir"}

    model: str = field(metadata=cli("as for deploylens profile", positional=True, group=SWEEP))
    out: str = field(  # a folder: one trace per point, sweep.json/.csv/.png
        metadata=cli(
            "folder for the traces and tables", path=True, required=True, always=True, group=SWEEP
        )
    )
    # by hand: the backend's default follows the model; the points are comma-separated lists
    backend: Backend = "torch"
    batches: list[int] = field(default_factory=lambda: [1])
    streams: list[int] = field(default_factory=lambda: [1])
    modes: list[Mode] = field(default_factory=lambda: ["serial"])
    executor: Executor = field(  # auto: Ray where the worker's interpreter has it
        default="auto",
        metadata=cli(
            "ray: each point a Ray task (GPU points need a GPU each); worker: one after "
            "another in the worker; auto (default): Ray only where it pays — a cluster, several "
            "GPUs, or CPU work (estimated from the cheapest point) of 30 s or more",
            choices=EXECUTORS,
            group=FAN_OUT,
        ),
    )
    ray_address: str = field(  # a running Ray cluster ("" : Ray started on this machine)
        default="",
        metadata=cli(
            "a running Ray cluster's GCS address, HOST:PORT (ray status prints it); "
            "default: Ray on this machine (loopback only), started and stopped with the sweep",
            group=FAN_OUT,
        ),
    )

    def base(self) -> ProfileRequest:
        return ProfileRequest(self.model, "", backend=self.backend, **CaptureLoop.part_of(self))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(SWEEP)
        groups = {SWEEP: group, FAN_OUT: parser.add_argument_group(FAN_OUT)}
        add_field_arguments(cls, group, groups)  # model, --out, the capture loop, the fan-out
        group.add_argument(
            "--backend",
            choices=BACKENDS,
            default=None,
            help="as for deploylens profile (default: from the model)",
        )
        group.add_argument("--batch", default="1", help="batch sizes, e.g. 1,8,32")
        group.add_argument("--streams", default="1", help="stream counts, e.g. 1,2,4")
        group.add_argument(
            "--mode", default="serial", help="modes, e.g. serial,pipelined,cudagraph"
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SweepRequest:
        return cls(
            **field_values(cls, args),
            backend=args.backend or infer_backend(args.model),
            batches=_int_list(args.batch),
            streams=_int_list(args.streams),
            modes=_mode_list(args.mode),
        )

    def cli_args(self) -> list[str]:
        args = field_args(self)
        flag(args, "--backend", self.backend, infer_backend(self.model))
        flag(args, "--batch", ",".join(map(str, self.batches)), "1")
        flag(args, "--streams", ",".join(map(str, self.streams)), "1")
        flag(args, "--mode", ",".join(self.modes), "serial")
        return args

    def prepared(self) -> SweepRequest:
        self.base().check()
        model = self.model if self.backend == "torch" else str(Path(self.model).resolve())
        return replace(self, model=model, out=output_path(self.out))


@dataclass
class LabRequest(Request["LabResult"]):
    """A lab scenario's trace and diagnosis (``deploylens lab``): real on a GPU, else synthetic."""

    FILES: ClassVar[dict[str, str]] = {"out": "out"}

    name: str  # by hand: its choices are the lab's scenarios, imported when asked
    out: str = field(
        metadata=cli(
            "trace file to write (.json)", path=True, required=True, always=True, group=SCENARIO
        )
    )
    synthetic: bool = field(  # even where a GPU is: the made-up trace (what CI checks)
        default=False, metadata=cli("made-up trace, no GPU used", group=SCENARIO)
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from deploylens.core.trace.lab import SCENARIOS

        group = parser.add_argument_group(SCENARIO)
        group.add_argument("name", choices=sorted(SCENARIOS))
        add_field_arguments(cls, group, {SCENARIO: group})

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LabRequest:
        return cls(args.name, **field_values(cls, args))

    def cli_args(self) -> list[str]:
        return [self.name, *field_args(self)]

    def prepared(self) -> LabRequest:
        return replace(self, out=output_path(self.out))
