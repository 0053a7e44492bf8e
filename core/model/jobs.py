"""Worker jobs about models (see ``core/worker/methods.py``)."""

from __future__ import annotations

from typing import Any

from deploylens.core.model.summary import inspect_model


def inspect_job(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    ctx.progress(None, "reading the model (weights stay on disk)")
    summary = inspect_model(params["path"], check=bool(params.get("check", True)))
    ctx.progress(1.0, "summarized")
    return summary.to_dict()
