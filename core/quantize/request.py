"""The ``quantize.calibrate`` request: INT8 calibration, its accuracy check and the TensorRT
cache — what ``deploylens calibrate`` and the Build panel's "Calibrate" fill."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, Literal

from deploylens.core.files import output_path
from deploylens.core.request_parts import (
    Part,
    add_field_arguments,
    cli,
    field_args,
    field_values,
)
from deploylens.core.requests import Request

if TYPE_CHECKING:
    from deploylens.core.quantize.result import CalibrationReport  # noqa: F401
    from deploylens.core.quantize.sensitivity import Report  # noqa: F401
    from deploylens.core.quantize.study import StudyReport  # noqa: F401

Method = Literal["minmax", "entropy", "percentile"]
METHODS: tuple[str, ...] = ("minmax", "entropy", "percentile")
DEFAULT_EVALUATE = 20
DEFAULT_CACHE_VERSION = "10.16"
# the --help sections
CALIB, CHECK = "calibration", "accuracy and TensorRT cache"
SENS, OUTPUTS, STUDY = "sensitivity", "evaluation and outputs", "the study"


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

    model: str = field(metadata=cli("the ONNX model", positional=True, path=True, group=CALIB))
    data: str = field(  # a folder of images or .npy/.npz arrays (or one .npz)
        metadata=cli(
            "images or .npy/.npz files", path=True, required=True, always=True, group=CALIB
        )
    )
    output: str = field(  # the Q/DQ model; default: <model>.<method>.qdq.onnx
        default="",
        metadata=cli(
            "the Q/DQ model (default MODEL.METHOD.qdq.onnx)", option="--out", path=True, group=CALIB
        ),
    )
    per_channel: bool = field(
        default=True,
        metadata=cli(
            "per-tensor weights (default per channel)",
            option="--per-tensor",
            negate=True,
            group=CALIB,
        ),
    )
    exclude: list[str] = field(  # node names kept in float
        default_factory=list,
        metadata=cli("a node kept in float (repeatable)", repeat=True, group=CALIB),
    )
    evaluate: int = field(  # samples for the accuracy check (0: none)
        default=DEFAULT_EVALUATE,
        metadata=cli(
            "samples for the accuracy check (from --eval-data, else the calibration data)",
            type=int,
            group=CHECK,
        ),
    )
    eval_data: str = field(  # held-out data for it; default: the calibration data
        default="",
        metadata=cli("held-out images/arrays for the accuracy check", path=True, group=CHECK),
    )
    trt_cache: str = field(  # also write a TensorRT ≤ 10 calibration cache here
        default="",
        metadata=cli("also write a TensorRT ≤10 calibration cache", path=True, group=CHECK),
    )
    trt_version: str = field(
        default=DEFAULT_CACHE_VERSION, metadata=cli("the cache header's TensorRT", group=CHECK)
    )
    threads: int = field(  # ONNX Runtime intra-op threads for the accuracy check (0: default)
        default=0, metadata=cli("ONNX Runtime threads", type=int, group=CHECK)
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(CALIB)
        groups = {CALIB: group, CHECK: parser.add_argument_group(CHECK)}
        add_field_arguments(cls, group, groups)  # its own, and its parts' (in CALIB) flags

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CalibrateRequest:
        return cls(**field_values(cls, args))

    def cli_args(self) -> list[str]:
        return field_args(self)

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

    model: str = field(metadata=cli("the ONNX model", positional=True, path=True, group=SENS))
    data: str = field(  # calibration data: a folder of images or .npy/.npz arrays
        metadata=cli("calibration images/arrays", path=True, required=True, always=True, group=SENS)
    )
    out: str = field(  # a folder for the plan and report; default: MODEL.sensitivity beside it
        default="",
        metadata=cli(
            "folder for the plan (default: MODEL.sensitivity beside the model, or in "
            "the outputs folder when the model's folder is not yours)",
            path=True,
            group=OUTPUTS,
        ),
    )
    precision: Precision = field(
        default="int8",
        metadata=cli(
            "the lower precision each layer is tried in (default int8)",
            choices=("int8", "fp16"),
            group=SENS,
        ),
    )
    metric: Metric = field(
        default="relL2",
        metadata=cli(
            "how far from FP32: rel L2 (default), cosine, or top-1 against --labels",
            choices=("relL2", "cosine", "top1"),
            group=SENS,
        ),
    )
    budget: float | None = field(  # relL2 ≤ it; cosine or top1 ≥ it (defaults per metric)
        default=None,
        metadata=cli(
            "relL2 ≤ B, or cosine/top1 ≥ B (default 0.02/0.999/0.99)", type=float, group=SENS
        ),
    )
    build: bool = field(  # also build the plan with TensorRT-RTX ahead of time (where installed)
        default=False,
        metadata=cli("build the plan with TensorRT-RTX (no GPU needed)", group=OUTPUTS),
    )
    reuse_prefix: bool = field(  # run only what a variant changes (core/quantize/prefix.py)
        default=True,
        metadata=cli(
            "evaluate every variant whole (default: only what it changes, from FP32's "
            "and the Q/DQ model's kept tensors)",
            option="--whole-model",
            negate=True,
            group=OUTPUTS,
        ),
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(SENS)
        groups = {SENS: group, OUTPUTS: parser.add_argument_group(OUTPUTS)}
        add_field_arguments(cls, group, groups, own=True)
        CalibrationMethod.add_part_arguments(group)
        CalibrationData.add_part_arguments(group)
        Evaluation.add_part_arguments(groups[OUTPUTS])

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SensitivityRequest:
        return cls(**field_values(cls, args))

    def cli_args(self) -> list[str]:
        return field_args(self)

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

    model: str = field(metadata=cli("the ONNX model", positional=True, path=True, group=STUDY))
    data: str = field(
        metadata=cli(
            "calibration images/arrays", path=True, required=True, always=True, group=STUDY
        )
    )
    executor: Literal["auto", "worker", "ray"] = field(  # auto: Ray where installed
        default="auto",
        metadata=cli(
            "ray: each configuration a Ray task; worker: one after another; auto "
            "(default): ray when installed (deploylens[cluster])",
            choices=("auto", "ray", "worker"),
            group=STUDY,
        ),
    )
    ray_address: str = field(default="", metadata=cli("a running Ray cluster", group=STUDY))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(STUDY)
        add_field_arguments(cls, group, {STUDY: group})  # its own and its parts' flags

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> StudyRequest:
        return cls(**field_values(cls, args))

    def cli_args(self) -> list[str]:
        return field_args(self)

    def sensitivity(self) -> SensitivityRequest:
        """The evaluation settings as the sensitivity analysis spells them."""
        return SensitivityRequest(
            self.model, self.data, **CalibrationData.part_of(self), **Evaluation.part_of(self)
        )

    def prepared(self) -> StudyRequest:
        checked = self.sensitivity().prepared()
        return replace(
            self,
            model=checked.model,
            data=checked.data,
            eval_data=checked.eval_data,
            labels=checked.labels,
        )
