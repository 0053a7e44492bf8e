"""The export job (in the worker): load the model, apply plugins, run the chosen exporter,
diagnose a failure, check the result."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.export.diagnose import diagnose
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.result import ExportResult
from deploylens.core.export.settings import DYNAMO, ExportSettings
from deploylens.core.export.verify import verify_export
from deploylens.core.files import output_path, staged_outputs
from deploylens.core.model.staging import commit_staged
from deploylens.core.plugin_api import OpPlugin, load_plugins
from deploylens.core.pytorch.source import load_model

DEFAULT_OPSET = {"torchscript": 17, "dynamo": 18}


@contextlib.contextmanager
def captured_output() -> Iterator[list[str]]:
    """Capture fds 1 and 2 (the exporters print the TorchScript IR and progress there) and
    echo them to stderr afterwards, where the worker's diagnostics go."""
    import sys

    box: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            box.append(text)
            os.write(2, text[-20000:].encode())


def _apply_plugins(
    plugins: list[OpPlugin], settings: ExportSettings, kwargs: dict[str, Any], opset: int
) -> list[OpPlugin]:
    registered = []
    for plugin in plugins:
        if settings.exporter not in plugin.exporters:
            raise UserError(
                f"Plugin '{plugin.name}' works with the "
                f"{' / '.join(plugin.exporters)} exporter, not {settings.exporter}."
            )
        if settings.exporter == DYNAMO:
            if plugin.custom_translation is not None:
                kwargs.setdefault("custom_translation_table", {}).update(
                    plugin.custom_translation()
                )
        else:
            if plugin.register_torchscript is not None:
                plugin.register_torchscript(opset)
                registered.append(plugin)
            if plugin.custom_opsets:
                kwargs.setdefault("custom_opsets", {}).update(plugin.custom_opsets)
    return registered


def ignored_symbolics(module: Any) -> list[str]:
    """autograd.Functions of the model's own code that define ``symbolic``: the dynamo exporter
    traces their ``forward`` instead (their custom ONNX op will not appear)."""
    import torch

    home = type(module).__module__
    found, stack = [], list(torch.autograd.Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__ == home and "symbolic" in vars(cls):
            found.append(cls.__qualname__)
    return sorted(set(found))


def export_job(ctx: Any, params: dict[str, Any]) -> ExportResult:
    import torch

    request = ExportRequest.from_params(params)
    source, settings = request.source, request.settings
    available, errors = load_plugins(request.plugin_entries)
    unknown = [name for name in settings.plugins if name not in available]
    if unknown:
        raise UserError(
            f"No plugin named '{unknown[0]}' "
            f"({errors.get(unknown[0], 'known: ' + ', '.join(available))})."
        )
    chosen = [available[name] for name in settings.plugins]
    ctx.progress(0.05, "loading the model")
    module, inputs, names = load_model(source)
    started = time.perf_counter()
    with torch.no_grad():  # the reference for the smoke test: part of the checks' cost
        expected = module(*inputs)
    reference_s = time.perf_counter() - started
    kwargs = settings.export_kwargs()
    kwargs.setdefault("input_names", list(names))
    if settings.exporter == DYNAMO:
        kwargs["verbose"] = False
    opset = settings.opset or DEFAULT_OPSET[settings.exporter]
    out = Path(output_path(settings.output))
    result = ExportResult(
        source=source,
        settings=settings,
        cli=request.cli_line(),
        script=request.python_script(),
        path=str(out),
        plugin_errors=errors,
    )
    # Export and check in a hidden folder beside the output; only a checked model is renamed
    # to its final name (a kill mid-write left a truncated file there, replacing a good one).
    with staged_outputs(out) as stage:
        staged = stage / out.name
        _export_and_check(
            ctx, module, inputs, expected, kwargs, settings, opset, chosen, staged, result
        )
        result.checks_s += reference_s
        if result.ok:
            commit_staged(stage, staged, out)
        elif result.invalid:
            invalid = out.with_suffix(".invalid.onnx")
            commit_staged(stage, staged, invalid)
            result.path = str(invalid)
    return result


def _export_and_check(
    ctx: Any,
    module: Any,
    inputs: Any,
    expected: Any,
    kwargs: dict[str, Any],
    settings: ExportSettings,
    opset: int,
    chosen: list[OpPlugin],
    out: Path,
    result: ExportResult,
) -> None:
    """Export to ``out`` (the staging path) and fill ``result``: findings, or the checks."""
    import torch

    registered = _apply_plugins(chosen, settings, kwargs, opset)
    ctx.progress(0.2, f"exporting with the {settings.exporter} exporter")
    started = time.perf_counter()
    try:
        with captured_output() as stderr, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                torch.onnx.export(module, inputs, str(out), **kwargs)
                failure = None
            except Exception as exc:  # the exporter's failure is the finding, not a crash
                failure = exc
        result.export_s = time.perf_counter() - started
        result.export_warnings = sorted(
            {
                str(w.message).splitlines()[0][:200]
                for w in caught
                if "deprecat" not in str(w.message).lower()
                and "feature will be removed" not in str(w.message)
            }
        )[:20]
    finally:
        for plugin in registered:
            if plugin.unregister_torchscript is not None:
                plugin.unregister_torchscript(opset)
    if settings.exporter == DYNAMO:
        for name in ignored_symbolics(module):
            result.export_warnings.append(
                f"the dynamo exporter ignores {name}.symbolic and inlines its forward; use the "
                "TorchScript exporter (or a custom translation) to emit its custom op"
            )
    if failure is not None:
        findings = diagnose(failure, settings.exporter, opset, stderr[0] if stderr else "")
        result.ok, result.findings = False, findings
        return
    ctx.progress(0.7, "checking: opset read-back, onnx.checker, ONNX Runtime smoke test")
    started = time.perf_counter()
    verify_export(
        str(out),
        settings.exporter,
        settings.opset,
        inputs,
        list(kwargs["input_names"]),
        expected,
        chosen,
        result,
    )
    result.checks_s = time.perf_counter() - started
    result.warnings += result.export_warnings
    result.invalid = bool(result.findings)
    result.ok = not result.findings
