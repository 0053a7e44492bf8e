"""The jobs a worker can run: method name → ``"module:function"``, imported only when run.

A job function takes ``(ctx, params)`` and returns a JSON-serializable payload. Large arrays travel
as ``.npz`` files written under ``ctx.workdir``, never inside the JSON.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from deploylens.core.job_table import JOBS

# every job's function, from the one job table (core/job_table.py)
METHODS: dict[str, str] = {name: job.run for name, job in JOBS.items()}


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
