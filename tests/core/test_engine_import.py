"""Engine and profile import on every real trtexec/TREx file in ../shared/artifacts (TensorRT
8.x–10.x, A100 and desktop GPUs): no TensorRT needed. Plus the names-only form and bad files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from deploylens.core.engine.layers import load_layer_info, onnx_nodes_from_name, parse_layer_info
from deploylens.core.engine.timings import load_profile, load_summary, load_times, parse_trtexec_log
from deploylens.core.engine.view import (
    diff_engines,
    latency_overlay,
    layer_table,
    precision_overlay,
    unmatched_times,
)
from deploylens.core.errors import UserError


def files(artifacts: Path, pattern: str) -> list[Path]:
    found = sorted(artifacts.rglob(pattern))
    assert found, pattern
    return found


def test_every_layer_info_file_parses_and_joins_its_profile(artifacts: Path) -> None:
    graphs = files(artifacts, "*.graph.json")
    assert len(graphs) >= 6
    for graph in graphs:
        info = load_layer_info(graph)
        assert info.detailed and info.layers and info.bindings, graph
        compute = [x for x in info.layers if not x.is_reformat and x.type != "NoOp"]
        assert all(x.onnx_nodes or x.region for x in compute), graph
        assert all(x.precision for x in compute if x.outputs), graph
        profile = graph.with_name(graph.name.replace(".graph.json", ".profile.json"))
        if profile.exists():
            count, times = load_profile(profile)
            assert count >= 1 and times
            assert unmatched_times(info, times) == [], graph  # same engine, same names
            rows = layer_table(info, times)
            shares = [r.percent for r in rows if r.percent is not None]
            assert sum(shares) == pytest.approx(100.0, abs=0.5)
            overlay = latency_overlay(info, times)
            assert all(v >= 0 for v in overlay.values()) and sum(overlay.values()) > 0


def test_int8_qat_engines_show_int8_layers_and_diff_against_fp16(artifacts: Path) -> None:
    root = artifacts / "nvidia-tensorrt-trex/examples/pytorch/resnet/A100"
    qat = load_layer_info(root / "qat/resnet-qat.onnx.engine.graph.json")
    fp16 = load_layer_info(root / "fp16/resnet.onnx.engine.graph.json")
    assert "INT8" in set(precision_overlay(qat).values())
    diff = diff_engines(
        fp16,
        load_layer_info(root / "fp32/resnet.onnx.engine.graph.json"),
        load_profile(root / "fp16/resnet.onnx.engine.profile.json")[1],
        load_profile(root / "fp32/resnet.onnx.engine.profile.json")[1],
    )
    changes = {(c.before, c.after) for c in diff.precision_changes}
    assert changes == {("FP16", "FP32")}
    assert diff.times is not None
    assert diff.times.total_b_ms > diff.times.total_a_ms  # FP32 is slower on A100
    assert diff.fused_differently == []  # the same ONNX model, the same fusions


def test_times_and_summaries(artifacts: Path) -> None:
    for timing in files(artifacts, "*.timing.json"):
        stats = load_times(timing)
        assert stats["inferences"] > 100 and stats["latency"]["median"] > 0
        assert stats["throughput_qps"] > 0
    for meta in files(artifacts, "*.profile.metadata.json"):
        summary = load_summary(meta)["summary"]
        assert summary["throughput_qps"] > 0 and summary["Latency"]["median"] > 0
    logs = files(artifacts, "output-fp*.txt")
    for log in logs:
        parsed = load_summary(log)
        assert parsed["tensorrt_version"] == "8.0.3"
        assert parsed["summary"]["throughput_qps"] > 1000
        assert parsed["summary"]["Latency"]["p99"] >= parsed["summary"]["Latency"]["median"]


def test_names_only_and_myelin_and_pointwise_names() -> None:
    info = parse_layer_info(
        {
            "Layers": [
                "Conv_0 + Relu_1",
                "{ForeignNode[/blocks/Add.../head/MatMul]}",
                "PWN(PWN(Sigmoid_3), Mul_4)",
            ]
        }
    )
    assert not info.detailed
    assert info.layers[0].onnx_nodes == ["Conv_0", "Relu_1"]
    assert info.layers[1].region == "ForeignNode[/blocks/Add.../head/MatMul]"
    assert info.layers[2].onnx_nodes == ["Sigmoid_3", "Mul_4"]
    assert onnx_nodes_from_name("Reformatting CopyNode for Input Tensor 0 to Conv_0") == ([], "")
    meta = parse_layer_info(
        {
            "Layers": [
                {
                    "Name": "fused",
                    "LayerType": "CaskConvolution",
                    "Metadata": "[ONNX Layer: a][ONNX Layer: b]",
                }
            ]
        }
    )
    assert meta.layers[0].onnx_nodes == ["a", "b"]


def test_bad_files_are_explained(artifacts: Path, tmp_path: Path) -> None:
    profile = files(artifacts, "*.profile.json")[0]
    with pytest.raises(UserError, match="has no 'Layers' list"):
        load_layer_info(profile)
    (tmp_path / "cut.json").write_text('{"Layers": [{"Name": ')
    with pytest.raises(UserError, match="not a readable layer-info JSON"):
        load_layer_info(tmp_path / "cut.json")
    with pytest.raises(UserError, match="is it an --exportProfile"):
        load_times(profile)
    with pytest.raises(UserError, match="performance summary"):
        parse_trtexec_log("[I] nothing here")


def test_engine_cli(artifacts: Path) -> None:
    from tests.core.test_cli import DEPLOYLENS

    root = artifacts / "nvidia-tensorrt-trex/examples/pytorch/resnet/A100"
    result = subprocess.run(
        [DEPLOYLENS, "engine", str(root / "qat/resnet-qat.onnx.engine.graph.json"),
         "--profile", str(root / "qat/resnet-qat.onnx.engine.profile.json"),
         "--diff", str(root / "fp16/resnet.onnx.engine.graph.json"), "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["detailed"] and report["diff"]["added"] and report["diff"]["removed"]
    assert {"INT8"} <= {row["out_precision"] for row in report["layers"]}


def test_times_reproduce_trtexecs_own_summary(artifacts: Path) -> None:
    """Each TREx example ships the --exportTimes records and the summary trtexec printed for
    the same run: the warm-up records (compute before --warmUp) are left out as trtexec does,
    and every figure agrees with the one trtexec printed."""
    checked = with_warmups = 0
    for timing in files(artifacts, "*.timing.json"):
        meta = timing.with_name(timing.name.replace(".timing.json", ".profile.metadata.json"))
        if not meta.is_file():
            continue
        summary = load_summary(meta)
        stats = load_times(timing, summary["warmup_ms"], "metadata")
        with_warmups += stats["warmup_records"] > 0  # older trtexec exports include them
        trtexec = summary["summary"]
        assert stats["throughput_qps"] == pytest.approx(trtexec["throughput_qps"], rel=2e-5)
        for ours, theirs in (("latency", "Latency"), ("compute", "GPU Compute Time")):
            for label, value in trtexec[theirs].items():
                # picked records agree to every printed digit; the mean is a sum of rounded
                # records here and of unrounded ones in trtexec
                rel = 5e-5 if label == "mean" else 1e-6
                assert float(f"{stats[ours][label]:.6g}") == pytest.approx(value, rel=rel), (
                    timing.name,
                    ours,
                    label,
                )
        checked += 1
    assert checked >= 6 and with_warmups >= 5


def _record(start: float, compute: float) -> dict[str, float]:
    return {
        "startEnqMs": start, "endEnqMs": start + 0.01, "startH2dMs": start,
        "endH2dMs": start, "startComputeMs": start, "endComputeMs": start + compute,
        "startD2hMs": start + compute, "endD2hMs": start + compute, "h2dMs": 0,
        "computeMs": compute, "d2hMs": 0, "latencyMs": compute,
    }  # fmt: skip


def test_warmup_records_are_left_out_and_said(tmp_path: Path) -> None:
    """Warm-up runs 10× slower than the rest: including them (the old behaviour) made the
    mean 2.8 ms and the max 10 ms for an engine that runs in 1 ms."""
    records = [_record(i * 10.0, 10.0) for i in range(20)]  # 0–190 ms: warm-up
    records += [_record(200.0 + i * 1.0, 1.0) for i in range(100)]
    path = tmp_path / "times.json"
    path.write_text(json.dumps(records))
    stats = load_times(path)
    assert stats["records"] == 120 and stats["warmup_records"] == 20
    assert stats["inferences"] == 100
    assert stats["latency"]["max"] == 1.0 and stats["latency"]["mean"] == pytest.approx(1.0)
    assert stats["throughput_qps"] == pytest.approx(1000.0)
    assert "warm-up" in stats["used"] and "200" in stats["used"]
    # a newer trtexec that already left them out: nothing is dropped
    path.write_text(json.dumps(records[20:]))
    assert load_times(path)["warmup_records"] == 0
    # the warm-up named in the log wins over the default
    assert load_times(path, 250.0, "log")["warmup_records"] == 50


def test_engine_refuses_device_metadata_and_keeps_the_report_without_a_summary(
    tmp_path: Path,
) -> None:
    from deploylens.core.cli import main

    meta = tmp_path / "resnet.engine.metadata.json"
    meta.write_text(json.dumps([{"Name": "NVIDIA A100", "ComputeCapability": [8, 0]}]))
    with pytest.raises(UserError, match="device metadata"):
        load_layer_info(meta)
    layers = tmp_path / "layers.json"
    layers.write_text(json.dumps({"Layers": [{"Name": "conv", "LayerType": "Conv"}]}))
    log = tmp_path / "build_only.log"
    log.write_text("[I] [TRT] Loaded engine size: 3 MiB\n[I] Engine built in 2.1 sec.\n")
    assert main(["engine", str(layers), "--log", str(log)]) == 1  # the log was unusable...
    with pytest.raises(UserError, match=r"build_only\.log has no trtexec performance summary"):
        load_summary(log)


def test_engine_report_survives_a_log_without_summary(tmp_path: Path, capsys) -> None:
    from deploylens.core.cli import main

    layers = tmp_path / "layers.json"
    layers.write_text(json.dumps({"Layers": [{"Name": "conv", "LayerType": "Conv"}]}))
    log = tmp_path / "cut.log"
    log.write_text("[I] === Model Options ===\n")
    assert main(["engine", str(layers), "--log", str(log)]) == 1
    out, err = capsys.readouterr()
    assert "conv" in out or "1 layers" in out or "Conv" in out  # ...but the layers were shown
    assert "cut.log has no trtexec performance summary" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"Name": "a", "LayerType": "C", "Outputs": [{"Dimensions": ["x"]}]}, "Dimensions"),
        ({"Name": "a", "LayerType": "C", "Inputs": 3}, "'Inputs' is int"),
    ],
)
def test_badly_typed_layer_fields_are_one_sentence(entry: dict, problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        parse_layer_info({"Layers": [entry]}, "x.json")


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"name": "a", "timeMs": "fast"}, "'timeMs' is 'fast', not a number"),
        ({"name": "a", "timeMs": [1]}, "not a number"),
        ({"name": "a", "timeMs": 1, "averageMs": None}, "'averageMs'"),
    ],
)
def test_profile_numbers_must_be_numbers(tmp_path: Path, row: dict, problem: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"count": 1}, row]))
    with pytest.raises(UserError, match=problem):
        load_profile(path)


def test_the_summary_never_contradicts_itself(artifacts: Path) -> None:
    """On every real engine: the reformat count is the type table's "Reformat" row (Q/DQ layers
    TensorRT runs as Reformat are their own row, NoOp copy nodes are NoOps), and each breakdown
    covers every layer and all the time, however many types there are."""
    from deploylens.core.engine.view import engine_summary, engine_text

    qdq_seen = False
    for graph in files(artifacts, "*.graph.json"):
        info = load_layer_info(graph)
        profile = graph.with_name(graph.name.replace(".graph.json", ".profile.json"))
        times = load_profile(profile)[1] if profile.exists() else None
        rows = layer_table(info, times)
        summary = engine_summary(info, rows, types=3)
        every_type = engine_summary(info, rows, types=99).by_type
        by_type = {e.name: e.layers for e in every_type}
        reformat_row = by_type.get("Reformat", 0)
        assert summary.reformat_layers == reformat_row, graph
        assert f"reformat layers: {reformat_row}" in engine_text(info, rows), graph
        assert len(summary.by_type) <= 3, graph
        for breakdown in (summary.by_type, summary.by_precision):
            assert sum(e.layers for e in breakdown) == len(info.layers), graph
            if summary.timed:
                ms = sum(e.ms for e in breakdown)
                assert ms == pytest.approx(summary.total_ms, rel=1e-9), graph
        # Precisions are TensorRT's data types, never a layer kind ("reformat") or a "?".
        assert not {e.name for e in summary.by_precision} & {"reformat", "?"}, graph
        qdq_seen |= any(layer.kind == "Reformat (Q/DQ)" for layer in info.layers)
    assert qdq_seen  # the QAT engines in the artifacts have them
