"""The engine reports say what the files hold (issue 63): TensorRT 10's Myelin layers
(``__myl_…_myl0_N``) counted as the region they form, a trtexec log whose only figures are
its ``--dumpProfile`` table read for that table and exiting 0, and a Jetson profile's DLA rows
on a DLA lane instead of among the GPU's kernels. Every file is written by the test in the
layout the tool writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploylens.core.cli import main
from deploylens.core.engine.layers import load_layer_info, myelin_region_count
from deploylens.core.engine.log_profile import parse_log_profile


def _layer(name: str, kind: str, nodes: str) -> dict[str, object]:
    return {"Name": name, "LayerType": kind, "Metadata": f"[ONNX Layer: {nodes}]",
            "Inputs": [{"Name": "x", "Dimensions": [1, 8], "Format/Datatype": "Half"}],
            "Outputs": [{"Name": "y", "Dimensions": [1, 8], "Format/Datatype": "Half"}],
            "TacticValue": "0x1"}  # fmt: skip


def _layers_json(tmp_path: Path) -> Path:
    """A TensorRT 10 layer info: two ordinary layers and one Myelin region of five kernels."""
    layers = [_layer("/conv1/Conv + /relu/Relu", "CaskConvolution", "/conv1/Conv")]
    for i, fused in enumerate(("FcCastAddErf", "AddRelu", "MulAdd", "Softmax", "Fc")):
        layers.append(_layer(f"__myl_{fused}_myl0_{i}", "kgen", f"/attn/op{i}"))
    layers.append(_layer("/head/Gemm", "CaskGemm", "/head/Gemm"))
    path = tmp_path / "engine.layers.json"
    path.write_text(json.dumps({"Layers": layers, "Bindings": ["x", "y"]}))
    return path


def test_myelin_layers_of_tensorrt_10_are_one_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = load_layer_info(_layers_json(tmp_path))
    assert myelin_region_count(info.layers) == 1
    assert [layer.myelin for layer in info.layers if layer.myelin] == ["myl0"] * 5
    assert main(["engine", str(tmp_path / "engine.layers.json")]) == 0
    assert "Myelin/ForeignNode regions: 1 (5 layers in them)" in capsys.readouterr().out


DUMP_PROFILE_10 = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v101600] # trtexec --loadEngine=e.plan --dumpProfile
[12/01/2026-10:00:00] [I] TensorRT version: 10.16.0
[12/01/2026-10:00:01] [I] Starting inference
[12/01/2026-10:00:04] [I]
[12/01/2026-10:00:04] [I] === Profile (32 iterations ) ===
[12/01/2026-10:00:04] [I]    Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer
[12/01/2026-10:00:04] [I]       10.53       0.3291       0.3287      50.0   /conv1/Conv + /relu/Relu
[12/01/2026-10:00:04] [I]        6.30       0.1969       0.1968      30.0   __myl_FcAdd_myl0_0
[12/01/2026-10:00:04] [I]        4.21       0.1316       0.1315      20.0   /head/Gemm
[12/01/2026-10:00:04] [I]       21.04       0.6576       0.6570     100.0   Total
[12/01/2026-10:00:04] [I]
&&&& PASSED TensorRT.trtexec [TensorRT v101600]
"""

DUMP_PROFILE_8 = """\
[07/06/2023-17:19:08] [I] === Profile (399 iterations ) ===
[07/06/2023-17:19:08] [I]                               Layer   Time (ms)   Avg. Time (ms)   Time %
[07/06/2023-17:19:08] [I]                       images to nvm       33.99           0.0852      1.1
[07/06/2023-17:19:08] [I]  {ForeignNode[Conv_0...Concat_198]}        3.38           0.0085      0.1
[07/06/2023-17:19:08] [I]                     head_3 from nvm     3069.55           7.6931     98.4
[07/06/2023-17:19:08] [I]                  images copy finish        0.67           0.0017      0.0
[07/06/2023-17:19:08] [I]                               Total     3107.59           7.7885    100.0
"""


def test_a_dump_profile_log_without_a_summary_is_read_for_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """7 TREx logs and TensorRT 10.16 --dumpProfile runs printed the report, then "error: …
    cut short or build-only", exit 1, with the profile table right there."""
    log = tmp_path / "run.log"
    log.write_text(DUMP_PROFILE_10)
    iterations, times = parse_log_profile(DUMP_PROFILE_10) or (0, [])
    assert iterations == 32 and [t[0] for t in times][-1] == "/head/Gemm"  # no Total row
    assert times[0][3] == pytest.approx(0.3287)  # the median
    assert main(["engine", str(_layers_json(tmp_path)), "--log", str(log), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["problems"] == [] and report["summary"]["profile"]["iterations"] == 32
    assert {row["name"] for row in report["profile"]} >= {"/head/Gemm"}
    assert "cut short" not in captured.err
    older = parse_log_profile(DUMP_PROFILE_8)
    assert older is not None and older[0] == 399
    assert [t[0] for t in older[1]][:2] == ["images to nvm", "{ForeignNode[Conv_0...Concat_198]}"]
    build_only = tmp_path / "build.log"
    build_only.write_text("[I] TensorRT version: 10.16.0\n[I] Engine built in 3.2 sec.\n")
    assert main(["engine", str(_layers_json(tmp_path)), "--log", str(build_only)]) == 1
    assert "nor a profile table" in capsys.readouterr().err


def test_dla_rows_of_a_jetson_profile_are_not_gpu_kernels(tmp_path: Path) -> None:
    from deploylens.core.trace.load import load_trace
    from deploylens.core.trace.model import KIND
    from deploylens.core.trace.stats import trace_stats

    rows = [{"count": 399}] + [
        {"name": name, "timeMs": total, "averageMs": average, "medianMs": median,
         "percentage": share}
        for name, total, average, median, share in (parse_log_profile(DUMP_PROFILE_8) or (0, []))[1]
    ] + [{"name": "/post/Sigmoid", "timeMs": 4.0, "averageMs": 0.01, "medianMs": 0.01,
          "percentage": 0.1}]  # fmt: skip
    path = tmp_path / "jetson.profile.json"
    path.write_text(json.dumps(rows))
    trace = load_trace(path)
    lanes = {trace.lanes[i].group for i in set(trace.lane.tolist())}
    assert lanes == {"GPU (trtexec)", "DLA (trtexec)"}
    kernels = [trace.names[n] for n in trace.name[trace.kind == KIND["kernel"]]]
    assert kernels == ["/post/Sigmoid"] and trace.meta["dla_layers"] == 4
    assert [row.name for row in trace_stats(trace).kernels] == ["/post/Sigmoid"]
