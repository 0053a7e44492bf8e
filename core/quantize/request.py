"""The ``quantize.calibrate`` request: INT8 calibration, its accuracy check and the TensorRT
cache — what ``deploylens calibrate`` and the Build panel's "Calibrate" fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from deploylens.core.files import output_path
from deploylens.core.request_parts import Part, cli
from deploylens.core.requests import Request, flag

if TYPE_CHECKING:
    from deploylens.core.quantize.result import CalibrationReport  # noqa: F401
    from deploylens.core.quantize.sensitivity import Report  # noqa: F401
    from deploylens.core.quantize.study import StudyReport  # noqa: F401

Method = Literal["minmax", "entropy", "percentile"]
METHODS: tuple[str, ...] = ("minmax", "entropy", "percentile")
DEFAULT_EVALUATE = 20
DEFAULT_CACHE_VERSION = "10.16"


def default_output(model: str, method: str) -> str:
    """Where a calibration writes its Q/DQ model unless told: beside the model (or the
    outputs folder for a bundled sample: ``core.outputs.beside``)."""
    from deploylens.core.outputs import beside

    return beside(model, f".{method}.qdq.onnx")


@dataclass(kw_only=True)
class CalibrationData(Part):
    """How the calibration samples are read: calibrate's, sensitivity's and the study's."""

    preprocess: str = field(
        default="", metadata=cli("for image folders, as for validate (e.g. imagenet)")
    )
    batches: int | None = field(  # default: every sample in the folder
        default=None, metadata=cli("at most this many batches", type=int)
    )


@dataclass(kw_only=True)
class CalibrationMethod(Part):
    """How the ranges are calibrated: calibrate's and sensitivity's (the study varies them)."""

    method: Method = field(
        default="entropy", metadata=cli("range calibration (default entropy)", choices=METHODS)
    )
    percentile: float = field(default=99.99, metadata=cli("the percentile method's", type=float))
    batch_size: int | None = field(  # default: the model's batch axis when fixed, else 1
        default=None,
        metadata=cli("calibration batch (default: the model's fixed batch, else 1)", type=int),
    )


@dataclass(kw_only=True)
class Evaluation(Part):
    """The samples a sensitivity analysis and a study score every variant on."""

    evaluate: int = field(default=64, metadata=cli("evaluation samples", type=int))
    eval_data: str = field(  # held-out data; default: the calibration data
        default="",
        metadata=cli("held-out images/arrays (default: the calibration data)", path=True),
    )
    labels: str = field(  # .npy of class indices for eval samples: top1 becomes accuracy
        default="", metadata=cli(".npy of class indices (top1 = accuracy)", path=True)
    )
    threads: int = field(default=0, metadata=cli("ONNX Runtime threads (0: its default)", type=int))


@dataclass
class CalibrateRequest(Request["CalibrationReport"], CalibrationData, CalibrationMethod):
    FILES: ClassVar[dict[str, str]] = {
        "model": "in",
        "data": "in",
        "eval_data": "in",
        "output": "out",
        "trt_cache": "out",
    }

    model: str
    data: str  # a folder of images or .npy/.npz arrays (or one .npz)
    output: str = ""  # the Q/DQ model; default: <model>.<method>.qdq.onnx
    per_channel: bool = True
    exclude: list[str] = field(default_factory=list)  # node names kept in float
    evaluate: int = DEFAULT_EVALUATE  # samples for the accuracy check (0: none)
    eval_data: str = ""  # held-out data for it; default: the calibration data
    trt_cache: str = ""  # also write a TensorRT ≤ 10 calibration cache here
    trt_version: str = DEFAULT_CACHE_VERSION  # the cache header's TensorRT
    threads: int = 0  # ONNX Runtime intra-op threads for the accuracy check (0: its default)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("calibration")
        group.add_argument("model", type=Path)
        group.add_argument("--data", type=Path, required=True, help="images or .npy/.npz files")
        CalibrationMethod.add_part_arguments(group)
        CalibrationData.add_part_arguments(group)
        group.add_argument(
            "--exclude", action="append", default=[], help="a node kept in float (repeatable)"
        )
        group.add_argument(
            "--per-tensor", action="store_true", help="per-tensor weights (default per channel)"
        )
        group.add_argument(
            "--out", type=Path, help="the Q/DQ model (default MODEL.METHOD.qdq.onnx)"
        )
        check = parser.add_argument_group("accuracy and TensorRT cache")
        check.add_argument(
            "--evaluate",
            type=int,
            default=DEFAULT_EVALUATE,
            help="samples for the accuracy check (from --eval-data, else the calibration data)",
        )
        check.add_argument(
            "--eval-data", type=Path, help="held-out images/arrays for the accuracy check"
        )
        check.add_argument(
            "--trt-cache", type=Path, help="also write a TensorRT ≤10 calibration cache"
        )
        check.add_argument(
            "--trt-version", default=DEFAULT_CACHE_VERSION, help="the cache header's TensorRT"
        )
        check.add_argument("--threads", type=int, default=0, help="ONNX Runtime threads")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CalibrateRequest:
        return cls(
            model=str(args.model),
            data=str(args.data),
            output=str(args.out) if args.out else "",
            **CalibrationMethod.part_values(args),
            **CalibrationData.part_values(args),
            per_channel=not args.per_tensor,
            exclude=list(args.exclude),
            evaluate=args.evaluate,
            eval_data=str(args.eval_data) if args.eval_data else "",
            trt_cache=str(args.trt_cache) if args.trt_cache else "",
            trt_version=args.trt_version,
            threads=args.threads,
        )

    def cli_args(self) -> list[str]:
        args = [self.model, "--data", self.data]
        args += CalibrationMethod.part_args(self) + CalibrationData.part_args(self)
        for node in self.exclude:
            args += ["--exclude", node]
        if not self.per_channel:
            args.append("--per-tensor")
        flag(args, "--out", self.output, "")
        flag(args, "--evaluate", self.evaluate, DEFAULT_EVALUATE)
        flag(args, "--eval-data", self.eval_data, "")
        flag(args, "--trt-cache", self.trt_cache, "")
        flag(args, "--trt-version", self.trt_version, DEFAULT_CACHE_VERSION)
        flag(args, "--threads", self.threads, 0)
        return args

    def prepared(self) -> CalibrateRequest:
        """Files checked and every path absolute (the worker's working folder is not ours)."""
        from deploylens.core.files import input_file, input_folder

        def absolute(path: str) -> str:
            return output_path(path) if path else ""

        return replace(
            self,
            model=str(input_file(self.model, "ONNX model").resolve()),
            data=str(input_folder(self.data, "calibration data").resolve()),
            eval_data=str(input_folder(self.eval_data, "evaluation data").resolve())
            if self.eval_data
            else "",
            output=absolute(self.output or default_output(self.model, self.method)),
            trt_cache=absolute(self.trt_cache),
        )


Precision = Literal["int8", "fp16"]
Metric = Literal["relL2", "cosine", "top1"]


@dataclass
class SensitivityRequest(Request["Report"], CalibrationData, CalibrationMethod, Evaluation):
    """Per-layer precision sensitivity (``deploylens sensitivity``, the Sensitivity view)."""

    FILES: ClassVar[dict[str, str]] = {
        "model": "in",
        "data": "in",
        "eval_data": "in",
        "labels": "in",
        "out": "outdir",
    }

    model: str
    data: str  # calibration data: a folder of images or .npy/.npz arrays
    out: str = ""  # a folder for the plan and report; default: MODEL.sensitivity beside the model
    precision: Precision = "int8"
    metric: Metric = "relL2"
    budget: float | None = None  # relL2 ≤ it; cosine or top1 ≥ it (defaults per metric)
    build: bool = False  # also build the plan with TensorRT-RTX ahead of time (where installed)
    reuse_prefix: bool = True  # run only what a variant changes (core/quantize/prefix.py)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("sensitivity")
        group.add_argument("model", type=Path)
        group.add_argument("--data", type=Path, required=True, help="calibration images/arrays")
        group.add_argument(
            "--precision", choices=("int8", "fp16"), default="int8",
            help="the lower precision each layer is tried in (default int8)",
        )  # fmt: skip
        CalibrationMethod.add_part_arguments(group)
        group.add_argument(
            "--metric", choices=("relL2", "cosine", "top1"), default="relL2",
            help="how far from FP32: rel L2 (default), cosine, or top-1 against --labels",
        )  # fmt: skip
        group.add_argument(
            "--budget", type=float, help="relL2 ≤ B, or cosine/top1 ≥ B (default 0.02/0.999/0.99)"
        )
        CalibrationData.add_part_arguments(group)
        evaluation = parser.add_argument_group("evaluation and outputs")
        Evaluation.add_part_arguments(evaluation)
        evaluation.add_argument(
            "--out",
            type=Path,
            help="folder for the plan (default: MODEL.sensitivity beside the model, or in the "
            "outputs folder when the model's folder is not yours)",
        )
        evaluation.add_argument(
            "--build", action="store_true", help="build the plan with TensorRT-RTX (no GPU needed)"
        )
        evaluation.add_argument(
            "--whole-model",
            action="store_true",
            help="evaluate every variant whole (default: only what it changes, from FP32's and "
            "the Q/DQ model's kept tensors)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SensitivityRequest:
        return cls(
            model=str(args.model), data=str(args.data), out=str(args.out) if args.out else "",
            precision=args.precision, metric=args.metric, budget=args.budget,
            build=bool(args.build), reuse_prefix=not args.whole_model,
            **CalibrationMethod.part_values(args), **CalibrationData.part_values(args),
            **Evaluation.part_values(args),
        )  # fmt: skip

    def cli_args(self) -> list[str]:
        args = [self.model, "--data", self.data]
        flag(args, "--precision", self.precision, "int8")
        flag(args, "--metric", self.metric, "relL2")
        flag(args, "--budget", self.budget, None)
        args += CalibrationMethod.part_args(self) + CalibrationData.part_args(self)
        args += Evaluation.part_args(self)
        flag(args, "--out", self.out, "")
        if self.build:
            args.append("--build")
        if not self.reuse_prefix:
            args.append("--whole-model")
        return args

    @property
    def out_dir(self) -> str:
        from deploylens.core.outputs import beside

        return self.out or beside(self.model, ".sensitivity")  # every job's one policy

    def prepared(self) -> SensitivityRequest:
        from deploylens.core.files import input_file, input_folder

        return replace(
            self,
            model=str(input_file(self.model, "ONNX model").resolve()),
            data=str(input_folder(self.data, "calibration data").resolve()),
            eval_data=str(input_folder(self.eval_data, "evaluation data").resolve())
            if self.eval_data
            else "",
            labels=str(input_file(self.labels, "labels").resolve()) if self.labels else "",
            out=output_path(self.out_dir),
        )


@dataclass
class StudyRequest(Request["StudyReport"], CalibrationData, Evaluation):
    """Calibration study (``deploylens calibration-study``): the same data calibrated with every
    method and calibration batch size, one table of errors and the ranges that differ most."""

    FILES: ClassVar[dict[str, str]] = {
        "model": "in",
        "data": "in",
        "eval_data": "in",
        "labels": "in",
    }

    model: str
    data: str
    executor: Literal["auto", "worker", "ray"] = "auto"  # auto: Ray where installed
    ray_address: str = ""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("the study")
        group.add_argument(
            "--executor", choices=("auto", "ray", "worker"), default="auto",
            help="ray: each configuration a Ray task; worker: one after another; auto "
            "(default): ray when installed (deploylens[cluster])",
        )  # fmt: skip
        group.add_argument("--ray-address", default="", help="a running Ray cluster")
        group.add_argument("model", type=Path)
        group.add_argument("--data", type=Path, required=True, help="calibration images/arrays")
        CalibrationData.add_part_arguments(group)
        Evaluation.add_part_arguments(group)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> StudyRequest:
        return cls(
            model=str(args.model), data=str(args.data), executor=args.executor,
            ray_address=args.ray_address, **CalibrationData.part_values(args),
            **Evaluation.part_values(args),
        )  # fmt: skip

    def cli_args(self) -> list[str]:
        args = [self.model, "--data", self.data]
        args += CalibrationData.part_args(self) + Evaluation.part_args(self)
        flag(args, "--executor", self.executor, "auto")
        flag(args, "--ray-address", self.ray_address, "")
        return args

    def sensitivity(self) -> SensitivityRequest:
        """The evaluation settings as the sensitivity analysis spells them."""
        return SensitivityRequest(self.model, self.data, **CalibrationData.part_of(self),
                                  **Evaluation.part_of(self))  # fmt: skip

    def prepared(self) -> StudyRequest:
        checked = self.sensitivity().prepared()
        return replace(self, model=checked.model, data=checked.data, eval_data=checked.eval_data,
                       labels=checked.labels)  # fmt: skip
