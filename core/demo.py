"""``deploylens demo``: run what the tool can do today on the bundled samples, headless.

Every issue that adds a capability extends this, so the README's main-job command always shows
the whole path: worker handshake → jobs on the samples → report → PNG of the main window.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from deploylens.core.environment import Environment
from deploylens.core.errors import UserError
from deploylens.core.files import atomic_write_text, write_json
from deploylens.core.frontends import load_frontend
from deploylens.core.graph.stats import graph_stats, stats_text
from deploylens.core.jobs import Worker
from deploylens.core.model.loading import read_model
from deploylens.core.model.request import InspectRequest
from deploylens.core.model.summary import ModelSummary
from deploylens.core.model.summary_text import summary_text
from deploylens.core.results import typed_result
from deploylens.core.samples import bundled_models, samples_dir
from deploylens.core.support.analysis import analyze, parse_target, report_dict
from deploylens.core.support.matrix import SupportMatrix
from deploylens.core.support.queries import reports_text
from deploylens.core.support.request import CollectRequest
from deploylens.core.worker.client import JobFailure

SCREENSHOT_MODEL = "small_cnn.dynamo.onnx"
DEMO_TARGETS = ("ort-cpu", "trt-8.6", "trt-10.1")


def _export_story(
    worker: Worker, out_dir: Path, report: dict[str, Any], matrix: SupportMatrix
) -> list[str]:
    """The seeds' ladder on the asinh sample: TorchScript at opset 9 fails, the plugin fixes it."""
    from deploylens.core.export.fixit import attach_fixes
    from deploylens.core.export.request import ExportRequest
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.plugin_api import load_plugins, plugin_entries
    from deploylens.core.pytorch.source import parse_spec

    lines = ["## Export: torch.asinh through the TorchScript exporter at opset 9", ""]
    runs = []
    for plugins in ([], ["asinh"]):
        settings = ExportSettings(
            exporter="torchscript",
            opset=9,
            plugins=plugins,
            output=str(out_dir / "asinh.opset9.onnx"),
        )
        try:
            request = ExportRequest(parse_spec("sample:asinh"), settings, plugin_entries())
            result = worker.run_request(request)
        except JobFailure as failure:
            lines += [f"Export could not run: {failure.message}", ""]
            return lines
        attach_fixes(result, matrix, load_plugins()[0])
        everything = result.to_dict()
        runs.append({key: everything[key] for key in ("ok", "findings", "ort")})
        lines += ["```", result.summary(), "```", ""]
    report["export"] = runs
    return lines


def run_demo(out_dir: Path, python: str | None = None, screenshot: bool = True) -> dict[str, Any]:
    """Inspect every bundled sample in a real worker; write report.md, report.json and a PNG."""
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict[str, Any] = {"models": [], "screenshot": None}
    markdown = ["# DeployLens demo report", ""]
    with Worker(python) as worker:
        # with ONNX Runtime's providers (the handshake leaves them out)
        found: Environment = typed_result("env.probe", worker.run("env.probe", {}))
        matrix = SupportMatrix.load(worker.run_request(CollectRequest()).path)
        targets = [parse_target(t) for t in DEMO_TARGETS]
        report["environment"] = found.to_dict()
        markdown += ["## Worker environment", "", *found.lines(), ""]
        markdown += ["## Bundled samples (`deploylens inspect`, `graph --stats`, `support`)", ""]
        for model in bundled_models():
            entry: dict[str, Any] = {"file": model.name}
            try:
                summary: ModelSummary = worker.run_request(InspectRequest(str(model)))
                entry["summary"] = summary.to_dict()
                entry["graph"] = graph = graph_stats(model, expand=8)
                reports = analyze(read_model(model), matrix, targets)
                entry["support"] = report_dict(reports)
                markdown += [
                    f"### {model.name}",
                    "",
                    "```",
                    summary_text(summary),
                    "",
                    stats_text(graph),
                    "",
                    reports_text(reports),
                    "```",
                    "",
                ]
            except JobFailure as failure:
                entry["error"] = failure.message
                markdown += [f"### {model.name}", "", f"Could not open: {failure.message}", ""]
            report["models"].append(entry)
        markdown += _export_story(worker, out_dir, report, matrix)
    if screenshot:
        png = out_dir / "main_window.png"
        try:
            render = load_frontend("screenshot")
            render(samples_dir() / SCREENSHOT_MODEL, png)
            report["screenshot"] = str(png)
            markdown += ["## Main window", "", f"![main window]({png.name})", ""]
        except (UserError, JobFailure) as exc:
            report["screenshot_error"] = str(exc)
            markdown += ["## Main window", "", f"Screenshot skipped: {exc}", ""]
    report["seconds"] = round(time.perf_counter() - started, 2)
    atomic_write_text(out_dir / "report.md", "\n".join(markdown))
    write_json(out_dir / "report.json", report)
    return report
