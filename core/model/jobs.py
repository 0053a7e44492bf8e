"""Worker jobs about models (see ``core/worker/methods.py``)."""

from __future__ import annotations

from typing import Any

from deploylens.core.model.loading import read_model
from deploylens.core.model.request import InspectRequest
from deploylens.core.model.summary import ModelSummary, summarize


def inspect_job(ctx: Any, params: dict[str, Any]) -> ModelSummary:
    """Parse, say so at once (the GUI then parses its own copy while this process checks and
    summarizes: a file that crashes the parser has crashed this worker first), summarize."""
    request = InspectRequest.from_params(params)
    ctx.progress(None, "reading the model (weights stay on disk)")
    model = read_model(request.path)
    ctx.progress(None, "checking the model", data={InspectRequest.PARSED: request.path})
    summary = summarize(model, request.path, check=request.check)
    ctx.progress(1.0, "summarized")
    return summary
