"""A sensitivity analysis's plan, written for every target: the mixed-precision model (Q/DQ with
the kept layers in float — what TensorRT 11 and TensorRT-RTX build strongly typed — or an FP16
model with them blocked), TensorRT ≤ 10 settings (``layer_precisions`` + ``precision_constraints
= "obey"``, the TOML ``deploylens build --settings`` reads; with the calibration cache for INT8),
the report as JSON, and the error-vs-layers-kept curve as a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from deploylens.core.files import atomic_write_bytes, atomic_write_text, save_png, write_json
from deploylens.core.quantize.sensitivity import PlanFiles, PlanModel, Report

CACHE_VERSION = "10.16"


def plan_settings(report: Report, cache: str) -> dict[str, Any]:
    """TensorRT ≤ 10 build settings for the plan (``core.trt.settings.BuildSettings`` TOML)."""
    precision = report.precision
    settings: dict[str, Any] = {
        "precisions": [precision],
        "precision_constraints": "obey",
    }
    if report.plan.kept:
        settings["layer_precisions"] = {node: "fp32" for node in report.plan.kept}
    if precision == "int8":
        method = "minmax" if report.method == "minmax" else "entropy"  # no percentile calibrator
        settings["calibration"] = {"method": method, "cache": cache}
    return settings


def write_plan(report: Report, plan: PlanModel, folder: Path) -> Report:
    """The plan's model, its TensorRT settings (and cache), the curve and the report, written in
    ``folder``; the report comes back naming them (``files``)."""
    from deploylens.core.quantize import trt_cache

    folder.mkdir(parents=True, exist_ok=True)
    suffix = "qdq" if report.precision == "int8" else "fp16"
    model_path = folder / f"plan.{suffix}.onnx"
    atomic_write_bytes(model_path, plan.model.SerializeToString())
    cache_path = folder / "plan.calib.cache"
    if report.precision == "int8":
        cache = trt_cache.from_ranges(plan.ranges, CACHE_VERSION, report.method)
        trt_cache.write_cache(cache, cache_path)
    settings = plan_settings(report, str(cache_path))
    atomic_write_text(folder / "plan.build.toml", tomli_w.dumps(settings))
    curve_png(report, folder / "curve.png")
    report.files = PlanFiles(
        model=str(model_path),
        settings=str(folder / "plan.build.toml"),
        curve=str(folder / "curve.png"),
        report=str(folder / "report.json"),
        calibration_cache=str(cache_path) if report.precision == "int8" else "",
    )
    write_json(folder / "report.json", report.to_dict())
    return report


def curve_png(report: Report, path: Path) -> None:
    """Error (the chosen metric) against layers kept in higher precision, with the budget."""
    from PIL import Image, ImageDraw

    width, height, left, bottom = 800, 480, 80, 60
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    points = [(p.kept, p.score.value(report.metric)) for p in report.curve]
    values = [v for _, v in points] + [report.budget, report.fp32.value(report.metric)]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    low, high = low - 0.05 * span, high + 0.05 * span
    kept_max = max(k for k, _ in points) or 1

    def xy(kept: float, value: float) -> tuple[float, float]:
        x = left + kept / kept_max * (width - left - 30)
        y = height - bottom - (value - low) / (high - low) * (height - bottom - 40)
        return x, y

    draw.text((left, 10), f"{report.metric} vs layers kept in FP32 ({report.precision.upper()})",
              fill="black")  # fmt: skip
    draw.line([(left, height - bottom), (width - 20, height - bottom)], fill="black")
    draw.line([(left, 30), (left, height - bottom)], fill="black")
    draw.text((width // 2 - 80, height - 35), "layers kept (most sensitive first)", fill="black")
    for tick in range(5):
        value = low + tick * (high - low) / 4
        draw.text((5, xy(0, value)[1] - 6), f"{value:.4g}", fill="gray")
    budget_y = xy(0, report.budget)[1]
    draw.line([(left, budget_y), (width - 20, budget_y)], fill="#d62728", width=1)
    draw.text((width - 150, budget_y - 14), f"budget {report.budget:g}", fill="#d62728")
    line = [xy(k, v) for k, v in points]
    if len(line) > 1:
        draw.line(line, fill="#1f77b4", width=2)
    for (k, _), (x, y) in zip(points, line, strict=True):
        draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill="#1f77b4")
        if k == len(report.plan.kept):
            draw.ellipse([x - 6, y - 6, x + 6, y + 6], outline="#2ca02c", width=2)
    save_png(image, path)
