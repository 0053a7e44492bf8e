"""The panels fill the same typed requests as the command line: a request set on a panel's form
comes back unchanged, and a fresh panel's defaults are the request's defaults (the Validate
panel said rtol 1e-4 with layer-wise on while the CLI said 1e-5 with it off)."""

from __future__ import annotations

from pathlib import Path

from deploylens.core.export.request import ExportRequest
from deploylens.core.pytorch.source import parse_spec
from deploylens.core.quantize.request import CalibrateRequest, SensitivityRequest
from deploylens.core.validate.request import ValidateRequest
from tests.core.test_requests import _export, _validate


def test_validate_form_round_trip_and_defaults(make_window, samples: Path) -> None:
    window = make_window()
    panel = window.validate_panel
    panel.set_model(str(samples / "small_cnn.dynamo.onnx"))
    assert panel.request() == ValidateRequest(str(samples / "small_cnn.dynamo.onnx"))
    request = _validate()
    panel.set_request(request)
    assert panel.request() == request


def test_export_form_round_trip_and_defaults(make_window) -> None:
    window = make_window()
    panel = window.export_panel
    fresh = panel.request()
    default = ExportRequest(parse_spec("sample:asinh"))
    assert fresh.source == default.source
    assert fresh.settings.exporter == default.settings.exporter
    assert (fresh.settings.constant_folding, fresh.settings.optimize) == (True, True)
    request = _export()
    panel.set_request(request)
    assert panel.request() == request


def test_build_panel_calibration_is_the_calibrate_request(
    make_window, samples: Path, tmp_path: Path
) -> None:
    from deploylens.core.trt.settings import BuildSettings, Calibration

    window = make_window()
    panel = window.build_panel
    model = str(samples / "small_cnn.dynamo.onnx")
    panel.set_model(model, {"image": [1, 3, 32, 32]})
    calibration = Calibration(
        method="percentile", percentile=99.9, data=str(tmp_path), preprocess="imagenet",
        batch_size=2, batches=3,
    )  # fmt: skip
    panel.form.set_settings(BuildSettings(calibration=calibration))
    panel.version.setCurrentText("10.16")
    expected = CalibrateRequest(
        model, str(tmp_path), method="percentile", percentile=99.9, preprocess="imagenet",
        batch_size=2, batches=3,
    )  # fmt: skip
    assert panel.calibrate_request() == expected
    assert panel.copy_calibration.text_of("cli") == expected.cli_line()


def test_sensitivity_form_round_trip_and_defaults(
    make_window, samples: Path, tmp_path: Path
) -> None:
    window = make_window()
    panel = window.sensitivity_panel
    model = str(samples / "small_cnn.dynamo.onnx")
    panel.set_model(model)
    panel.data.setText(str(tmp_path))
    fresh = panel.request()
    assert fresh == SensitivityRequest(model, str(tmp_path), out=fresh.out)  # the CLI's defaults
    request = SensitivityRequest(
        model, str(tmp_path), out=fresh.out, precision="fp16", method="percentile",
        metric="top1", budget=0.93, preprocess="imagenet", evaluate=297,
        eval_data=str(tmp_path / "held-out"), labels=str(tmp_path / "labels.npy"),
    )  # fmt: skip
    panel.set_request(request)
    assert panel.request() == request
