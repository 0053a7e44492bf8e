"""The export job (in the worker): load the model, apply plugins, run the chosen exporter,
diagnose a failure, check the result."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from deploylens.core.errors import UserError
from deploylens.core.export.diagnose import diagnose
from deploylens.core.export.request import ExportRequest
from deploylens.core.export.result import ExportResult
from deploylens.core.export.settings import DYNAMO, TORCHSCRIPT, ExportSettings
from deploylens.core.export.verify import verify_export
from deploylens.core.files import output_path, staged_outputs
from deploylens.core.model.staging import commit_staged
from deploylens.core.plugin_api import OpPlugin, load_plugins
from deploylens.core.pytorch.source import InputSpec, load_model

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


def _reference_run(module: Any, inputs: tuple[Any, ...], names: list[str]) -> Any:
    """PyTorch's own outputs on the example (the smoke test's reference); an embedding's index
    error names the integer inputs and the ``:LOW:HIGH`` that fixes it."""
    import torch

    try:
        with torch.no_grad():
            return module(*inputs)
    except IndexError as exc:
        fault = embedding_at_fault(module, inputs)
        ints = [
            f"{name} (values {int(t.min())}..{int(t.max())})"
            for name, t in zip(names, inputs, strict=False)
            if hasattr(t, "is_floating_point") and not t.is_floating_point() and t.numel()
        ]
        example = "input_ids:1x16:int64:0:999"
        if fault is not None:  # the table that raised, and the input that fed it
            table, rows, ids = fault
            fed = [n for n, t in zip(names, inputs, strict=False) if _same(t, ids)]
            ints = [
                f"{fed[0] if fed else 'an input'} (values {int(ids.min())}..{int(ids.max())}) "
                f"feeds the embedding {table} of {rows} rows"
            ]
            if fed:
                example = f"{fed[0]}:{'x'.join(str(d) for d in ids.shape)}:int64:0:{rows - 1}"
        raise UserError(
            f"The model failed on its example inputs: {str(exc).splitlines()[0][:200]}"
            + (f" — an index outside the table it reads: {', '.join(ints)}" if ints else ""),
            "Give the integer inputs a range within the vocabulary: --input "
            f"NAME:SHAPE:int64:LOW:HIGH (e.g. {example}), or --inputs X.npz.",
        ) from None


def embedding_at_fault(module: Any, inputs: tuple[Any, ...]) -> tuple[str, int, Any] | None:
    """(the embedding's module path, its rows, the ids it got) of the lookup that raised: the
    model run again with a hook before every ``nn.Embedding`` — the last one entered, where
    its ids fall outside its table. The error then names that table's size, not the smallest
    table of the model (a token-type table of 2 rows was named for input_ids)."""
    import torch

    entered: list[tuple[str, Any, Any]] = []
    handles = [
        layer.register_forward_pre_hook(
            lambda mod, args, name=name: entered.append((name, mod, args[0] if args else None))
        )
        for name, layer in module.named_modules()
        if isinstance(layer, torch.nn.Embedding)
    ]
    try:
        with torch.no_grad():
            module(*inputs)
    except IndexError:
        pass
    finally:
        for handle in handles:
            handle.remove()
    if not entered:
        return None
    name, layer, ids = entered[-1]
    if not isinstance(ids, torch.Tensor) or not ids.numel():
        return None
    if int(ids.min()) >= 0 and int(ids.max()) < layer.num_embeddings:
        return None  # that lookup was fine: the error came from elsewhere
    return name, int(layer.num_embeddings), ids


def _same(given: Any, ids: Any) -> bool:
    import torch

    return isinstance(given, torch.Tensor) and given.shape == ids.shape and torch.equal(given, ids)


def _defaults_from_model(
    source: Any, settings: ExportSettings, names: list[str], expected: Any
) -> ExportSettings:
    """What the export takes from the model where the user said nothing: outputs named by
    their keys (a ``ModelOutput``'s ``last_hidden_state``, a detector's ``boxes``), and for
    ``hf:DIR`` Optimum's dynamic batch and sequence axes."""
    from deploylens.core.pytorch.outputs import flatten, output_names

    changes: dict[str, Any] = {}
    if not settings.output_names:
        found = output_names(flatten(expected))
        if found:
            changes["output_names"] = found
    if source.kind == "hf" and not settings.dynamic_axes:
        from deploylens.core.pytorch.huggingface import dynamic_axes

        changes["dynamic_axes"] = dynamic_axes(names)
        changes["input_names"] = settings.input_names or list(names)
    return replace(settings, **changes) if changes else settings


def drawn_inputs(names: list[str], inputs: tuple[Any, ...]) -> list[InputSpec]:
    """The example inputs as specs (name, shape, dtype, the range their values span), for the
    reproducer script."""
    specs = []
    for i, tensor in enumerate(inputs):
        if not hasattr(tensor, "dtype") or not hasattr(tensor, "shape"):
            return []
        dtype = str(tensor.dtype).removeprefix("torch.")
        floating = tensor.is_floating_point()
        low = -1.0 if floating else float(tensor.min()) if tensor.numel() else 0.0
        high = 1.0 if floating else float(tensor.max()) if tensor.numel() else 0.0
        name = names[i] if i < len(names) else f"input_{i}"
        specs.append(InputSpec(name, [int(d) for d in tensor.shape], dtype, low, high))
    return specs


def _other_exporter(
    module: Any, inputs: Any, kwargs: dict[str, Any], settings: ExportSettings, out: Path
) -> str:
    """Whether the other exporter writes this model (its default opset, into the staging
    folder, never kept): "exports", or its own first line."""
    import torch

    other = TORCHSCRIPT if settings.exporter == DYNAMO else DYNAMO
    options = replace(settings, exporter=other, opset=None).export_kwargs(
        varargs="dynamic_shapes" in kwargs
    )
    options["input_names"] = kwargs.get("input_names", [])
    if other == DYNAMO:
        options["verbose"] = False
    target = out.with_name(f"other-exporter-{out.name}")
    try:
        with captured_output(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, inputs, str(target), **options)
    except Exception as exc:
        found = diagnose(exc, other, None)[0]
        return f"{found.message[:200]}" + (f" at {found.source}" if found.source else "")
    finally:
        for leftover in out.parent.glob(f"{target.name}*"):
            leftover.unlink(missing_ok=True)
    return "exports"


def export_job(ctx: Any, params: dict[str, Any]) -> ExportResult:

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
    expected = _reference_run(module, inputs, names)
    reference_s = time.perf_counter() - started
    settings = _defaults_from_model(source, settings, names, expected)
    request = replace(request, settings=settings)
    kwargs = settings.export_kwargs(varargs=source.kind == "hf")
    kwargs.setdefault("input_names", list(names))
    if settings.exporter == DYNAMO:
        kwargs["verbose"] = False
    opset = settings.opset or DEFAULT_OPSET[settings.exporter]
    out = Path(output_path(settings.output))
    result = ExportResult(
        source=source,
        settings=settings,
        cli=request.cli_line(),
        script=request.python_script(drawn_inputs(names, inputs)),
        path=str(out),
        plugin_errors=errors,
        warnings=list(getattr(module, "load_notes", [])),  # an hf: task head starting random
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
            except ModuleNotFoundError:  # the exporter's own needs (onnxscript): the worker
                raise  # says what is missing, with the one line that installs them all
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
        ctx.progress(0.6, "the export failed: trying the other exporter on the same model")
        findings[0].other_exporter = _other_exporter(module, inputs, kwargs, settings, out)
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
