"""The jobs a worker can run: method name → ``"module:function"``, imported only when run.

A job function takes ``(ctx, params)`` and returns a JSON-serializable payload. Large arrays travel
as ``.npz`` files written under ``ctx.workdir``, never inside the JSON.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

METHODS: dict[str, str] = {
    "model.inspect": "deploylens.core.model.jobs:inspect_job",
    "validate.outputs": "deploylens.core.validate.run:validate_job",
    "quantize.calibrate": "deploylens.core.quantize.job:calibrate_job",
    "quantize.sensitivity": "deploylens.core.quantize.job:sensitivity_job",
    "quantize.study": "deploylens.core.quantize.job:study_job",
    "build.engine": "deploylens.core.trt.job:build_job",
    "surgery.apply": "deploylens.core.surgery.job:surgery_job",
    "trace.profile": "deploylens.core.trace.job:profile_job",
    "trace.sweep": "deploylens.core.trace.job:sweep_job",
    "trace.lab": "deploylens.core.trace.job:lab_job",
    "export.run": "deploylens.core.export.run:export_job",
    "support.collect": "deploylens.core.support.collect:support_job",
    "support.tensorrt_probe": "deploylens.core.trt.probe:tensorrt_probe_job",
    "support.tensorrt_ops": "deploylens.core.trt.probe:tensorrt_ops_job",
    "support.sample_aten": "deploylens.core.support.torch_ops:sample_aten_job",
    "graph.shapes": "deploylens.core.graph.jobs:shapes_job",
    "graph.tensor_stats": "deploylens.core.graph.jobs:tensor_stats_job",
    "env.probe": "deploylens.core.worker.selftest:probe_job",
    # Self-tests: Preferences uses them to check an interpreter; the tests use them too.
    "selftest.echo": "deploylens.core.worker.selftest:echo_job",
    "selftest.progress": "deploylens.core.worker.selftest:progress_job",
    "selftest.noisy": "deploylens.core.worker.selftest:noisy_job",
    "selftest.segfault": "deploylens.core.worker.selftest:segfault_job",
    "selftest.import": "deploylens.core.worker.selftest:import_job",
    "selftest.user_error": "deploylens.core.worker.selftest:user_error_job",
    "selftest.bug": "deploylens.core.worker.selftest:bug_job",
    "selftest.sleep": "deploylens.core.worker.selftest:sleep_job",
    "selftest.array": "deploylens.core.worker.selftest:array_job",
}


class UnknownMethod(LookupError):
    pass


def resolve(method: str) -> Callable[..., Any]:
    try:
        target = METHODS[method]
    except KeyError:
        raise UnknownMethod(
            "the worker has no job called '{}' (known: {})".format(method, ", ".join(METHODS))
        ) from None
    module_name, _, attribute = target.partition(":")
    result: Callable[..., Any] = getattr(importlib.import_module(module_name), attribute)
    return result
