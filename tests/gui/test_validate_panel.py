"""The Validate panel with the real worker, torch and ONNX Runtime: a broken model, its first
diverging node, the table selecting in the graph, the overlay, the project and the files."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from deploylens.core.graph.scene import BOX_NODE
from deploylens.core.validate.tolerances import Tolerances
from deploylens.gui.validate.layers_model import NODE_ROLE
from deploylens.gui.validate.panel import OVERLAY_NAME
from tests.gui.conftest import JOB_TIMEOUT_MS, wait_opened
from tests.helpers.perturb import perturb_first


def test_broken_model_first_divergence_table_graph_and_project(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "small_cnn.onnx"
    perturbed = perturb_first(samples / "small_cnn.dynamo.onnx", broken)
    window = make_window()
    wait_opened(qtbot, window, broken)
    panel = window.validate_panel
    panel.torch_spec.setText("sample:small_cnn")
    panel.rtol.setText("1e-4")
    panel.atol.setText("1e-4")
    panel.layerwise.setChecked(True)  # off by default, as on the command line
    with qtbot.waitSignal(panel.sig_result, timeout=120_000):
        panel.run_button.click()
    assert panel.banner.text().startswith("FAIL") and perturbed in panel.banner.text()
    first = panel.proxy.index(0, 0)
    panel.layers.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    rows = [panel.proxy.data(panel.proxy.index(r, 1)) for r in range(panel.proxy.rowCount())]
    assert perturbed in rows
    # The first failing row in topological order is the perturbed node.
    failing = [
        panel.proxy.data(panel.proxy.index(r, 1))
        for r in range(panel.proxy.rowCount())
        if panel.proxy.data(panel.proxy.index(r, 9)) == "✗"
    ]
    assert failing[0] == perturbed
    # Sorting by the error jump puts the perturbed node on top.
    panel.layers.sortByColumn(6, Qt.SortOrder.DescendingOrder)
    first = panel.proxy.index(0, 0)
    assert panel.proxy.data(first, NODE_ROLE) == perturbed
    # A click selects that node in the graph.
    graph = window.graph_panel
    qtbot.waitUntil(lambda: graph.model is not None and not graph.busy, timeout=JOB_TIMEOUT_MS)
    panel.layers.clicked.emit(first)
    qtbot.waitUntil(lambda: graph.canvas.selected[0] == BOX_NODE, timeout=JOB_TIMEOUT_MS)
    assert graph.model.ir.label(graph.canvas.selected[1]) == perturbed
    # The error is painted on the graph, on a log scale, as the overlay now shown.
    overlay = graph.overlays[OVERLAY_NAME]
    assert graph.overlay_box.currentText() == OVERLAY_NAME and overlay.log_scale
    assert overlay.value_range()[1] > 1e-3
    assert panel.plot_box.built and len(panel.plot_points) == panel.layers_model.rowCount()
    # the plot shows the limit a layer passes under and decades on its axis, not "×1e-09"
    limit = 10 ** panel.limit_line.value()
    assert limit == pytest.approx(Tolerances().rel_l2_for(""))
    assert not panel.plot_box.plot.getAxis("left").autoSIPrefix
    assert any(y > limit for _, y in panel.plot_points)  # the perturbed layers are above it
    # The project remembers the settings and the result; a re-open shows it again.
    assert panel.export_to(tmp_path / "layers.csv").read_text().startswith("index,node")
    saved = json.loads(panel.export_to(tmp_path / "result.json").read_text())
    assert saved["layerwise"]["first_diverging"]["node"] == perturbed
    project = window.document.save_project(tmp_path / "p.deploylens.toml")
    second = make_window()
    wait_opened(qtbot, second, project)
    again = second.validate_panel
    assert again.torch_spec.text() == "sample:small_cnn"
    assert again.request().tolerances == panel.request().tolerances  # rtol/atol 1e-4 again
    assert again.result is not None and again.banner.text() == panel.banner.text()
    # the project keeps the request's own fields, read back as strictly as the worker reads it
    table = tomllib.loads(project.read_text())["validate"]
    assert table["request"]["tolerances"]["rtol"] == {"": 1e-4} and "path" not in table["request"]


def test_bad_settings_and_files_are_explained(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    window = make_window()
    panel = window.validate_panel
    with qtbot.waitSignal(panel.sig_message) as message:
        panel.run_button.click()
    assert message.args[0] == "Open an ONNX model first."
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel.rtol.setText("tight")
    with qtbot.waitSignal(panel.sig_message) as message:
        panel.run_button.click()
    assert "use a number or OUTPUT:number" in message.args[0]
    (tmp_path / "junk.json").write_text("[1, 2")
    with qtbot.waitSignal(panel.sig_message) as message:
        panel.open_result(tmp_path / "junk.json")
    assert "not a readable validation result" in message.args[0]
    assert panel.run_button.isEnabled()


def test_an_inconclusive_verdict_says_why_in_the_panel(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """Outputs all zero on both sides (a dead head): the panel shows INCONCLUSIVE (the CLI's
    exit 3: neither a PASS nor a FAIL on a right export), the reason, what inputs were used
    and the note about random weights — the same words as the CLI. (Outputs ~1e-9 that
    disagree are a plain FAIL on rel L2 since the verdict became scale-aware:
    tests/core/test_validate_verdicts.py.)"""
    import numpy as np

    from deploylens.core.validate.compare import compare, judge_scale
    from deploylens.core.validate.result import ValidationResult
    from deploylens.core.validate.tolerances import Tolerances

    tolerances = Tolerances()
    comparison = compare("logits", np.zeros(100), np.zeros(100), tolerances)
    judge_scale(comparison, tolerances)
    result = ValidationResult(
        model="small_cnn.onnx", reference="PyTorch eager", candidate="ONNX Runtime (CPU)",
        inputs={"image": [1]}, batches=1, samples=1, seed=0, inputs_file="", preprocess="",
        inputs_used="one batch of seeded random inputs (seed 0, uniform in [-1, 1])",
        notes=["torchvision:x is built with random weights"], tolerances=tolerances,
        outputs=[comparison], passed=False,
    )  # fmt: skip
    window = make_window()
    panel = window.validate_panel
    panel.show_result(result)
    banner = panel.banner.text()
    assert banner.startswith("INCONCLUSIVE") and "all zero" in banner
    assert "seeded random inputs" in banner and "random weights" in banner
    last = panel.outputs.columnCount() - 1
    assert panel.outputs.item(0, last).text().startswith("inconclusive")


def test_outputs_that_pass_over_diverging_layers_are_not_a_green_pass(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """How the panel shows outputs that pass over a diverging intermediate: a real layer-wise
    run's result with one intermediate marked failing at 99.996 % within (the headline logic
    itself is core's, tested in test_validate_verdicts.py) — amber, rows in graph order, and
    the failing row never reads 100 %."""
    import numpy as np

    from deploylens.core.validate.result import ValidationResult, within_text

    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.validate_panel
    panel.layerwise.setChecked(True)
    with qtbot.waitSignal(panel.sig_result, timeout=120_000):
        panel.run_button.click()
    assert panel.result is not None
    result = ValidationResult.from_dict(json.loads(json.dumps(panel.result.to_dict())))
    assert result.layerwise is not None
    layers = result.layerwise.layers
    layers[1].passed, layers[1].within = False, 0.99996
    result.layerwise.first_diverging = layers[1]
    assert result.passed
    panel.show_result(result)
    assert panel.banner.text().startswith("PASS (outputs) — LAYERS DIFFER")
    assert "#8a4b00" in panel.banner.styleSheet()  # amber, not green
    rows = [int(panel.proxy.data(panel.proxy.index(r, 0))) for r in range(panel.proxy.rowCount())]
    assert rows == sorted(rows)  # graph order, not output-first
    texts = [panel.proxy.data(panel.proxy.index(r, 8)) for r in range(panel.proxy.rowCount())]
    assert within_text(0.99996) in texts and np.all([t != "100.00%" for t in texts])


def test_the_error_overlay_is_painted_against_the_limit_and_a_new_model_clears_the_panel(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """A PASS at ~1e-7 was painted the scale's top colour (bright yellow): the scale ran min→max
    with no limit, while the plot beside it drew the 0.01 limit. The overlay's scale now reaches
    the limit, the legend names it, and opening another model clears the last one's rows and
    curve."""
    import math

    from deploylens.gui.validate.panel import OVERLAY_NAME

    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    panel = window.validate_panel
    panel.layerwise.setChecked(True)
    with qtbot.waitSignal(panel.sig_result, timeout=120_000):
        panel.run_button.click()
    assert panel.result is not None and panel.result.passed and panel.plot_points
    graph = window.graph_panel
    qtbot.waitUntil(lambda: OVERLAY_NAME in graph.overlays, timeout=5000)
    overlay = graph.overlays[OVERLAY_NAME]
    limit = panel.result.tolerances.rel_l2_for("")
    assert overlay.limit == limit
    low, high = overlay.value_range()
    assert high >= limit
    values = overlay.values[np.isfinite(overlay.values)]
    assert values.size and values.max() < limit / 100  # a clean model: far under the limit
    top = overlay.colors_for(np.array([high]))[0]
    for color in overlay.colors_for(values):  # none painted like the limit's colour
        assert not np.array_equal(color, top)
    position = (math.log10(max(values.max(), 1e-30)) - math.log10(max(low, 1e-30))) / (
        math.log10(high) - math.log10(max(low, 1e-30))
    )
    assert position < 0.8
    assert any(label.endswith("(limit)") for label, _ in overlay.legend_entries())

    other = tmp_path / "other.onnx"
    other.write_bytes((samples / "roll_dims.dynamo.onnx").read_bytes())
    wait_opened(qtbot, window, other)
    assert panel.banner.text() == "No validation yet."
    assert panel.outputs.rowCount() == 0 and panel.proxy.rowCount() == 0
    assert panel.plot_points == [] and not panel.plot_box.plot.listDataItems()


def test_a_shared_projects_validate_settings_are_read_strictly(
    qtbot, make_window, samples: Path, tmp_path: Path
) -> None:
    """A project file someone shared: a wrong type in its [validate] request is said (the
    form keeps its defaults), never coerced into a setting; a project saved before the table
    held the request still opens with its texts."""
    model = tmp_path / "m.onnx"
    model.write_bytes((samples / "small_cnn.dynamo.onnx").read_bytes())
    shared = tmp_path / "shared.deploylens.toml"
    shared.write_text(
        '[deploylens]\nschema = 1\n[model]\npath = "m.onnx"\n'
        '[validate.request]\nseed = "7; import os"\nlayerwise = true\n'
    )
    window = make_window()
    with qtbot.waitSignal(window.validate_panel.sig_message, timeout=JOB_TIMEOUT_MS) as said:
        window.open_path(shared)
    assert "validate settings" in said.args[0] and "seed must be an integer" in said.args[0]
    panel = window.validate_panel
    assert panel.seed.value() == 0 and not panel.layerwise.isChecked()
    old = tmp_path / "old.deploylens.toml"
    old.write_text(
        '[deploylens]\nschema = 1\n[model]\npath = "m.onnx"\n'
        '[validate]\ntorch = "sample:small_cnn"\nrtol = "1e-3"\nseed = 3\n'
    )
    second = make_window()
    wait_opened(qtbot, second, old)
    legacy = second.validate_panel
    assert legacy.torch_spec.text() == "sample:small_cnn" and legacy.rtol.text() == "1e-3"
    assert legacy.request().seed == 3
