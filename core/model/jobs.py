"""Worker jobs about models (see ``core/worker/methods.py``)."""

from __future__ import annotations

from typing import Any

from deploylens.core.model.request import InspectRequest
from deploylens.core.model.summary import ModelSummary, inspect_model


def inspect_job(ctx: Any, params: dict[str, Any]) -> ModelSummary:
    request = InspectRequest.from_params(params)
    ctx.progress(None, "reading the model (weights stay on disk)")
    summary = inspect_model(request.path, check=request.check)
    ctx.progress(1.0, "summarized")
    return summary
