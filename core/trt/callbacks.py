"""TensorRT's Python callback classes — logger, progress monitor, layer profiler. Their base
classes exist only once a TensorRT module is loaded, so each is made from the module given."""

from __future__ import annotations

from typing import Any

LOG_LEVELS = {"INTERNAL_ERROR": "error", "ERROR": "error", "WARNING": "warning", "INFO": "info"}


def make_logger(trt: Any, log: list[tuple[str, str]]) -> Any:
    """An ``ILogger`` that keeps every message with its level (the build report shows them)."""
    base: Any = trt.ILogger  # TensorRT's classes are only known at run time
    # severity → our level, looked up once: a 10k-node parse logs ~85k messages, and reading
    # each message's enum name cost more CPU than the parse itself
    levels = {
        severity: LOG_LEVELS.get(
            getattr(severity, "name", str(severity)).rsplit(".", 1)[-1], "debug"
        )
        for severity in getattr(trt.ILogger.Severity, "__members__", {}).values()
    }
    append = log.append

    class Logger(base):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            level = levels.get(severity)
            if level is None:  # a severity this module did not list (a fake's plain string)
                name = getattr(severity, "name", str(severity)).rsplit(".", 1)[-1]
                level = LOG_LEVELS.get(name, "debug")
            append((level, msg))

    return Logger()


def make_monitor(trt: Any, adapter: Any) -> Any:
    """An ``IProgressMonitor``: phases drive the adapter's progress; returning False cancels."""
    totals: dict[str, int] = {}

    monitor_base: Any = trt.IProgressMonitor

    class Monitor(monitor_base):
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            totals[phase_name] = max(int(num_steps), 1)
            adapter.phases.append(phase_name)
            adapter._report(None, phase_name)

        def step_complete(self, phase_name: str, step: int) -> bool:
            total = totals.get(phase_name, 1)
            if next(iter(totals), phase_name) == phase_name:  # the outermost phase drives the bar
                adapter._report(min((step + 1) / total, 1.0), f"{phase_name} {step + 1}/{total}")
            return not adapter.stopping()  # False asks TensorRT to stop the build

        def phase_finish(self, phase_name: str) -> None:
            totals.pop(phase_name, None)

    return Monitor()


def make_profiler(trt: Any) -> tuple[Any, dict[str, list[float]]]:
    """An ``IProfiler`` that collects every layer's time per run (ms)."""
    times: dict[str, list[float]] = {}

    profiler_base: Any = trt.IProfiler

    class Profiler(profiler_base):
        def __init__(self) -> None:
            trt.IProfiler.__init__(self)

        def report_layer_time(self, layer_name: str, ms: float) -> None:
            times.setdefault(layer_name, []).append(float(ms))

    return Profiler(), times
