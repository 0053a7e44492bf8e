"""The Export panel with the real exporters: a failure, its fixes, one-click apply, the graph."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from deploylens.gui.common.styles import BAD_STYLE, OK_STYLE
from tests.gui.conftest import JOB_TIMEOUT_MS, export_sample


def test_fail_fix_and_open_in_graph(qtbot, make_window, tmp_path: Path) -> None:
    window = make_window()
    panel = window.export_panel
    assert {
        panel.plugin_list.item(i).data(Qt.ItemDataRole.UserRole)
        for i in range(panel.plugin_list.count())
    } >= {"asinh", "deform_conv2d", "customOp2"}
    assert not export_sample(qtbot, window, "asinh", "torchscript", 9, tmp_path / "asinh.onnx").ok
    # a failure reads as one: a red banner naming the exporter, not a plain-text line
    assert panel.banner.text().startswith("Export FAILED with the torchscript exporter")
    assert BAD_STYLE in panel.banner.styleSheet()
    top = panel.findings.topLevelItem(0)
    assert top.text(0) == "aten::asinh"
    # the Detail column wraps its sentence (it was cut at the panel's edge) and tells it whole
    assert panel.findings.wordWrap() and panel.findings.header().stretchLastSection()
    assert top.toolTip(1).startswith(top.text(1))
    window.docks["Export"].raise_()
    panel.findings.resize(520, 300)
    qtbot.wait(50)
    line = panel.findings.fontMetrics().height()
    assert panel.findings.columnWidth(1) < panel.findings.fontMetrics().horizontalAdvance(
        top.text(1)
    )  # the sentence is wider than its column …
    assert panel.findings.visualItemRect(top).height() >= 2 * line  # … so it wraps
    # every input box says what it is for
    from PySide6.QtWidgets import QFormLayout

    form = panel.findChildren(QFormLayout)[0]
    labels = []
    for widget in (panel.factory, panel.npz):
        label = form.labelForField(widget)
        labels.append(label.text() if label is not None else "")
    assert all(labels), labels
    fixes = [top.child(i).data(0, Qt.ItemDataRole.UserRole) for i in range(top.childCount())]
    plugin_fix = next(f for f in fixes if f.plugin == "asinh")
    symbolic = next(f for f in fixes if f.kind == "symbolic")
    panel.findings.setCurrentItem(top.child(fixes.index(symbolic)))
    assert "register_custom_op_symbolic" in panel.code.toPlainText()
    panel.findings.setCurrentItem(top.child(fixes.index(plugin_fix)))
    assert panel.apply_button.isEnabled()
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=JOB_TIMEOUT_MS):
        panel.apply_button.click()
    assert panel.result is not None and panel.result.ok and panel.result.actual_opset == 9
    assert "agrees with torch, max |Δ| 0" in panel.summary.toPlainText()
    assert panel.banner.text().startswith("Exported asinh.onnx (opset 9)")
    assert OK_STYLE in panel.banner.styleSheet()
    assert window.document.model_path == tmp_path / "asinh.onnx"
    assert "Asinh" in {
        window.graph_panel.model.ir.op_type(i)
        for i in range(window.graph_panel.model.ir.node_count)
    }


def test_a_hugging_face_folder_exports_validates_and_builds_in_the_panels(
    qtbot, make_window, tmp_path: Path, rtx
) -> None:
    """Issue 43: a folder written by save_pretrained (tiny BERT, random weights, made here) is
    exported from the Export panel (the folder picker's kind), validated against itself in the
    Validate panel and built ahead of time in the Build panel — each verdict green."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=64)  # fmt: skip
    folder = tmp_path / "bert"
    transformers.BertModel(config).eval().save_pretrained(folder, safe_serialization=True)
    window = make_window()
    panel = window.export_panel
    panel.kind.setCurrentText("Hugging Face folder")
    assert panel.task.isEnabled() and not panel.factory.isEnabled()
    panel.target.setText(str(folder))
    panel.output.setText(str(tmp_path / "bert.onnx"))
    # A dynamo export of a transformer takes 15-40 s of CPU: on a loaded 2-core machine, more.
    with qtbot.waitSignal(window.graph_panel.sig_loaded, timeout=300_000):
        panel.export_button.click()
    result = panel.result
    assert result is not None and result.ok and result.ort is not None and result.ort.agrees
    assert panel.banner.text().startswith("Exported bert.onnx")
    assert OK_STYLE in panel.banner.styleSheet()
    assert result.settings.output_names == ["last_hidden_state", "pooler_output"]
    validate = window.validate_panel
    out = str(tmp_path / "bert.onnx")
    qtbot.waitUntil(lambda: str(validate.model_path) == out, timeout=JOB_TIMEOUT_MS)
    validate.torch_spec.setText(f"hf:{folder}")
    messages: list[str] = []
    validate.sig_message.connect(messages.append)
    validate.run_button.click()
    qtbot.waitUntil(lambda: validate.run_button.isEnabled(), timeout=120_000)
    assert validate.banner.text().startswith("PASS"), (validate.banner.text(), messages)
    build = window.build_panel
    build.version.setCurrentText("rtx")
    build.form.targets.setText("sm89")
    build.form.profiles.setPlainText(
        "input_ids: 1x16 / 1x16 / 1x16\nattention_mask: 1x16 / 1x16 / 1x16\n"
        "token_type_ids: 1x16 / 1x16 / 1x16"
    )
    build.build_button.click()
    qtbot.waitUntil(lambda: build.build_button.isEnabled() and build.banner.text() != "",
                    timeout=JOB_TIMEOUT_MS)  # fmt: skip
    qtbot.waitUntil(lambda: build.banner.text().startswith(("Built", "TensorRT")),
                    timeout=JOB_TIMEOUT_MS)  # fmt: skip
    assert build.banner.text().startswith("Built"), build.banner.text()
