"""Every model in ../shared/artifacts either opens or gets one clear sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploylens.core.errors import ModelLoadError
from deploylens.core.model.summary import inspect_model
from tests.conftest import artifacts_dir

FOUND = artifacts_dir()
MODELS = sorted(FOUND.rglob("*.onnx")) if FOUND else []
# Everything outside the 1,769 generated backend node tests gets its own test id.
CURATED = [p for p in MODELS if "onnx-pip-1.21.0-backend-test-data" not in p.parts]


def _open_or_explain(path: Path) -> str:
    try:
        summary = inspect_model(path)
    except ModelLoadError as exc:
        assert "\n" not in exc.message and exc.message.endswith(".")
        return "refused"
    assert summary.ir_version > 0
    return "opened"


@pytest.mark.parametrize(
    "path", CURATED, ids=[str(p.relative_to(FOUND)) for p in CURATED] if FOUND else []
)
def test_curated_artifact_models(path: Path) -> None:
    _open_or_explain(path)


@pytest.mark.parametrize(
    "stride",
    [pytest.param(8, id="every-8th"), pytest.param(1, id="all", marks=pytest.mark.slow_tier)],
)
def test_all_backend_node_test_models(artifacts: Path, stride: int) -> None:
    """Every ONNX backend node test model opens (the slower tier); make test opens a fixed
    eighth of them (every 8th by name)."""
    models = sorted((artifacts / "onnx-pip-1.21.0-backend-test-data").rglob("model.onnx"))
    assert len(models) > 1500
    outcomes = [_open_or_explain(path) for path in models[::stride]]
    assert outcomes.count("opened") == len(models[::stride])


def test_tensorflow_graph_is_refused_clearly(artifacts: Path) -> None:
    pb = artifacts / "nvidia-tensorrt-onnx-test-models/tools/Polygraphy/tests/models/tf_identity.pb"
    with pytest.raises(ModelLoadError) as caught:
        inspect_model(pb)
    assert "tf_identity.pb" in caught.value.message


def test_polygraphy_ext_weights_model_reports_its_missing_file(artifacts: Path) -> None:
    """Polygraphy keeps this model's data in data/, not beside it: a real missing-file case."""
    models = artifacts / "nvidia-tensorrt-onnx-test-models/tools/Polygraphy/tests/models"
    summary = inspect_model(models / "ext_weights.onnx")
    assert summary.problems and "ext_weights.data' is missing" in summary.problems[0]
    beside = inspect_model(models / "ext_weights_same_dir" / "ext_weights.onnx")
    assert beside.problems == [] and beside.external_data[0].present


def test_custom_domain_models_from_onnxruntime_extensions(artifacts: Path) -> None:
    models = sorted((artifacts / "microsoft-onnxruntime-extensions").rglob("*.onnx"))
    assert models
    domains: set[str] = set()
    for path in models:
        if _open_or_explain(path) == "opened":
            domains.update(inspect_model(path).opset_imports)
    assert "ai.onnx.contrib" in domains
