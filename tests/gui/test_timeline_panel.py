"""The Timeline panel with real widgets: a synthetic 50k-event trace imported off the UI thread,
painted as one raster (pixels of the kernel colour in stream lanes), W/S/A/D and wheel zoom/pan,
click → details with the correlated API call, Shift+drag → range statistics, search next/prev,
overview navigation, exports; and in the main window a real ONNX Runtime profile of the sample
model linked both ways to the graph, with per-node latency painted as an overlay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QPoint, Qt

from deploylens.core.graph.scene import BOX_NODE
from deploylens.core.trace.export import write_chrome
from deploylens.core.trace.index import TimelineIndex
from deploylens.core.trace.model import KIND, Trace
from deploylens.gui.timeline import panel as timeline_panel
from deploylens.gui.timeline.canvas import AXIS_H, HEADER_SHARE, HEADER_W, TimelineCanvas
from deploylens.gui.timeline.panel import TimelinePanel
from deploylens.gui.timeline.raster import BACKGROUND_PIXEL, KIND_COLORS, paint
from tests.gui.conftest import JOB_TIMEOUT_MS, wait_opened
from tests.helpers.synthetic_trace import make_trace


def open_panel(qtbot, path: Path) -> TimelinePanel:
    panel = TimelinePanel(None)
    qtbot.addWidget(panel)
    panel.resize(1300, 900)
    panel.show()
    task = panel.load(str(path))
    qtbot.waitUntil(lambda: panel.trace is not None, timeout=JOB_TIMEOUT_MS)
    assert not task.worker.is_alive() or panel.trace is not None
    qtbot.waitUntil(lambda: panel.stats is not None, timeout=JOB_TIMEOUT_MS)  # after 1st paint
    return panel


def test_a_large_trace_paints_navigates_and_answers(qtbot, tmp_path: Path, monkeypatch) -> None:
    path = write_chrome(make_trace(50_000), tmp_path / "big.json")
    panel = open_panel(qtbot, path)
    canvas: TimelineCanvas = panel.canvas
    assert "50,000 events" in panel.status.text()
    image = canvas.grab().toImage()
    kernel = KIND_COLORS["kernel"]
    y = AXIS_H + ROW_MID
    row = [_rgb(image, x, y) for x in range(canvas.header_w + 30, canvas.width() - 30)]
    assert sum(abs(c[2] - kernel[2]) < 60 and c[2] > c[0] for c in row) > len(row) // 2
    # keyboard and wheel: W zooms in, S out, A/D pan, F fits
    span = canvas.t1 - canvas.t0
    qtbot.keyClick(canvas, Qt.Key.Key_W)
    assert canvas.t1 - canvas.t0 < span
    before = canvas.t0
    qtbot.keyClick(canvas, Qt.Key.Key_D)
    assert canvas.t0 > before
    qtbot.keyClick(canvas, Qt.Key.Key_F)
    assert canvas.t1 - canvas.t0 == span
    assert panel.overview.region == (canvas.t0, canvas.t1)  # the overview follows
    # zoom deep into one kernel, click it: details name its launch (the flow arrow's other end)
    trace = panel.trace
    first = int(np.flatnonzero(trace.kind == KIND["kernel"])[100])
    canvas.select(first, center=True)
    rect = canvas._event_rect(first)
    canvas.select(-1)
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert canvas.selected == first
    assert "cudaLaunchKernel" in panel.details.toPlainText()
    assert panel.index.partner(first) >= 0
    # Shift+drag selects a range → its statistics
    qtbot.keyClick(canvas, Qt.Key.Key_F)
    start, end = QPoint(canvas.header_w + 100, 60), QPoint(canvas.header_w + 400, 60)
    qtbot.mousePress(canvas, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, start)
    qtbot.mouseMove(canvas, end)
    qtbot.mouseRelease(canvas, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, end)
    assert trace is not None and panel.range_stats is not None
    assert 0 < panel.range_stats.events < len(trace)
    assert "Streams" in panel.range_view.toPlainText()
    # a long range is summarized on a thread; the view says so until it is done
    monkeypatch.setattr(timeline_panel, "SYNC_RANGE_EVENTS", 1000)
    assert panel.select_range(*panel.index.span) is None
    assert "Computing statistics" in panel.range_view.toPlainText()
    qtbot.waitUntil(lambda: panel.range_stats is not None, timeout=JOB_TIMEOUT_MS)
    assert trace is not None and panel.range_stats is not None
    assert panel.range_stats.events == len(trace)
    # search: next / previous walk the matches in time order
    panel.search.setText("sgemm_64x32")
    panel.step(True)
    a = canvas.selected
    panel.step(True)
    b = canvas.selected
    assert "sgemm_64x32" in trace.names[int(trace.name[a])] and trace.start[b] >= trace.start[a]
    panel.step(False)
    assert canvas.selected == a
    # kernel table + distribution
    assert panel.stats is not None and panel.kernels.rowCount() == len(panel.stats.kernels)
    counts = panel.show_distribution(panel.stats.kernels[0].name)
    assert counts.sum() == panel.stats.kernels[0].count
    # overview click moves the region
    qtbot.keyClick(canvas, Qt.Key.Key_W)
    qtbot.keyClick(canvas, Qt.Key.Key_W)
    old = canvas.t0
    qtbot.mouseClick(
        panel.overview, Qt.MouseButton.LeftButton, pos=QPoint(panel.overview.width() - 20, 20)
    )
    assert canvas.t0 > old
    # exports
    with qtbot.waitSignal(
        panel.export_chrome(str(tmp_path / "x.json")).sig_done, timeout=JOB_TIMEOUT_MS
    ):
        pass
    assert json.loads((tmp_path / "x.json").read_text())["traceEvents"]
    assert [p.name for p in panel.export_csv(str(tmp_path))][:3] == [
        "kernels.csv",
        "streams.csv",
        "copies.csv",
    ]
    assert panel.export_png(str(tmp_path / "v.png")).read_bytes()[:4] == b"\x89PNG"


ROW_MID = 8


def test_bad_trace_is_explained_and_the_panel_keeps_working(qtbot, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"traceEvents": [{"ph": "X", "ts": 1,')
    panel = TimelinePanel(None)
    qtbot.addWidget(panel)
    panel.load(str(tmp_path / "bad.json"))
    qtbot.waitUntil(lambda: "truncated" in panel.status.text(), timeout=JOB_TIMEOUT_MS)
    assert panel.trace is None
    canvas = panel.canvas
    qtbot.keyClick(canvas, Qt.Key.Key_W)  # no trace: nothing to do, nothing raised
    canvas.grab()


def test_profile_links_timeline_and_graph_both_ways(qtbot, make_window, samples: Path) -> None:
    window = make_window()
    wait_opened(qtbot, window, samples / "small_cnn.dynamo.onnx")
    graph, timeline = window.graph_panel, window.timeline_panel
    qtbot.waitUntil(lambda: graph.model is not None and not graph.busy, timeout=JOB_TIMEOUT_MS)
    dialog = timeline.capture(accept=False)  # the Profile dialog, filled for the open model
    assert dialog.form.backend.currentText() == "ort"
    timeline.submit_capture(dialog)  # real ONNX Runtime profiler, in the worker
    qtbot.waitUntil(lambda: timeline.trace is not None, timeout=JOB_TIMEOUT_MS)
    assert timeline.trace.meta["format"] == "onnxruntime"
    assert Path(timeline.path).parent != samples  # never written next to the user's model
    qtbot.waitUntil(lambda: "Latency (timeline)" in graph.overlays, timeout=JOB_TIMEOUT_MS)
    # timeline → graph
    trace = timeline.trace
    mean = int(np.flatnonzero(trace.name == trace.names.index("node_mean"))[0])
    timeline.canvas.select(mean, center=True)
    assert graph.canvas.selected[0] == BOX_NODE
    assert graph.model.ir.label(graph.canvas.selected[1]) == "node_mean"
    # graph → timeline: the user selects a node in the canvas
    timeline.canvas.select(-1)
    ir = graph.model.ir
    node = next(i for i in range(len(ir.kind)) if ir.label(i) == "node_linear")
    graph.canvas.select_box(int(graph.canvas.scene.node_box[node]))
    selected = timeline.canvas.selected
    assert selected >= 0 and trace.names[int(trace.name[selected])] == "node_linear"
    # ORT's optimized names: the NCHWc kernel "relu_nchwc" ran node_Conv_27 + node_relu
    fused = int(np.flatnonzero(trace.name == trace.names.index("relu_nchwc"))[0])
    timeline.canvas.select(fused, center=True)
    assert graph.model.ir.label(graph.canvas.selected[1]) == "node_Conv_27"
    timeline.canvas.select(-1)
    conv = next(i for i in range(len(ir.kind)) if ir.label(i) == "node_Conv_27")
    graph.canvas.select_box(int(graph.canvas.scene.node_box[conv]))
    assert trace.names[int(trace.name[timeline.canvas.selected])] == "relu_nchwc"
    latency = graph.overlays["Latency (timeline)"].values
    assert latency[conv] > 0 and latency[node] > 0  # renamed kernels paint their nodes too


def test_zoomed_out_rows_paint_the_same_from_the_coverage_grid_as_from_events() -> None:
    """The grid path (O(width) per row) must look like the event path it replaces."""
    index = TimelineIndex(make_trace(300_000, lanes=4, seed=5))
    assert index.coverage, "rows this dense get a coverage grid"
    rows = [(row, 20 * n) for n, row in enumerate(sorted(index.coverage))]
    args = (*index.span, 1200, rows, 20 * len(rows), 20)
    fast, _ = paint(index, *args)
    grids, index.coverage = index.coverage, {}
    slow, _ = paint(index, *args)
    index.coverage = grids
    y = [row_y + 10 for _, row_y in rows]
    fast, slow = fast[y], slow[y]
    assert (fast != BACKGROUND_PIXEL).sum() > 0.5 * fast.size  # dense rows: mostly painted
    assert ((fast != BACKGROUND_PIXEL) == (slow != BACKGROUND_PIXEL)).mean() > 0.98
    hue = (fast >> 16 & 0xFF).astype(int) - (fast & 0xFF).astype(int)  # red − blue: the kind
    same = np.sign(hue) == np.sign((slow >> 16 & 0xFF).astype(int) - (slow & 0xFF).astype(int))
    assert same.mean() > 0.95


def test_sweep_and_lab_from_the_timeline(qtbot, make_window, samples: Path) -> None:
    """A CPU sweep fills the Sweep tab (skipped points with reasons; a row opens its trace),
    and a lab scenario opens with its diagnosis on top of the statistics."""
    window = make_window()
    timeline = window.timeline_panel
    dialog = timeline.sweep(accept=False)
    form = dialog.form
    form.model.setText("sample:small_cnn")
    form.backend.setCurrentText("torch")
    form.batch.setText("1,2")
    form.streams.setText("1")
    form.mode.setText("serial,pipelined")
    form.iterations.setValue(3)
    form.warmup.setValue(1)
    timeline.submit_capture(dialog)
    arrived: list[dict] = []
    timeline.job.sig_data.connect(arrived.append)  # each point as it finishes
    view = timeline.sweep_view
    qtbot.waitUntil(lambda: view.table.rowCount() == 4, timeout=JOB_TIMEOUT_MS)
    statuses = [view.table.item(r, 6).text() for r in range(4)]
    assert statuses.count("ok") == 2
    assert sorted(d["point"]["batch"] for d in arrived) == [1, 2]  # streamed before the result
    assert all("needs a CUDA device" in s for s in statuses if s != "ok")
    assert len(view.scatter.points()) == 2
    view.table.cellDoubleClicked.emit(0, 0)
    qtbot.waitUntil(lambda: timeline.trace is not None, timeout=JOB_TIMEOUT_MS)
    form.batch.setText("1,x")
    timeline.submit_capture(dialog)
    assert "not a list of whole numbers" in timeline.status.text()
    timeline.run_lab("h2d-bound")
    qtbot.waitUntil(lambda: "lab-h2d-bound" in timeline.path, timeout=JOB_TIMEOUT_MS)
    qtbot.waitUntil(lambda: "h2d-bound" in timeline.summary.toPlainText(), timeout=JOB_TIMEOUT_MS)
    assert "copies take" in timeline.summary.toPlainText()


def _rgb(image: Any, x: int, y: int) -> tuple[int, int, int]:
    colour = image.pixelColor(x, y)
    return (colour.red(), colour.green(), colour.blue())


def _gpu_trace() -> Trace:
    """Two streams (kernels and copies on one), a CPU thread, 131 ms long: a trace made here."""
    from deploylens.core.trace.model import Lane, TraceBuilder

    builder = TraceBuilder()
    thread = builder.lane(Lane("process 1", "thread 4242 (python3.11)"))
    compute = builder.lane(Lane("GPU 0", "stream 7", 0, 7))
    side = builder.lane(Lane("GPU 0", "stream 20", 0, 20))
    for k in range(400):
        t = k * 330_000
        builder.add(t, 20_000, thread, KIND["cuda_api"], "cudaLaunchKernel", corr=k)
        name = ("volta_sgemm_128x64_nn", "implicit_convolve_sgemm", "elementwise_kernel")[k % 3]
        builder.add(t + 30_000, 200_000, compute, KIND["kernel"], name, corr=k)
        builder.add(t + 240_000, 60_000, compute, KIND["memcpy_h2d"], "Memcpy HtoD", nbytes=1 << 20)
        builder.add(t + 50_000, 100_000, side, KIND["kernel"], "reduce_kernel")
    return builder.finish()


def test_gpu_lanes_first_distinct_ticks_folding_pinning_and_kernel_colours(
    qtbot, tmp_path: Path
) -> None:
    path = write_chrome(_gpu_trace(), tmp_path / "gpu.json")
    panel = open_panel(qtbot, path)
    canvas = panel.canvas
    index = panel.index
    # GPU rows on the first screen, before the CPU thread; the stream with copies is split
    titles = [index.row_title(row) for row, _ in canvas.visible_rows() if index.row_title(row)]
    assert titles[0].startswith("GPU 0 / stream 7 · kernels")
    assert titles[1] == "GPU 0 / stream 7 · memory" and titles[-1].startswith("process 1")
    # ticks stay distinct however deep the zoom (they all read "131.2 ms" before)
    for span in (131_000_000, 2_000_000, 50_000, 500):
        middle = 131_200_000
        canvas.set_view(middle - span // 2, middle + span // 2)
        canvas.grab()
        assert len(canvas.last_ticks) >= 3 and len(set(canvas.last_ticks)) == len(canvas.last_ticks)
    # fold the CPU thread's nested rows and pin the side stream to the top
    thread = next(lane for lane in range(len(index.lane_depth)) if not index.is_gpu_lane(lane))
    y = AXIS_H + int(canvas.row_y[index.lane_first_row[thread]]) + 4 - canvas.scroll_y
    rows_before = canvas.shown_rows.size
    qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=QPoint(20, y))
    if index.lane_depth[thread] > 1:
        assert canvas.shown_rows.size == rows_before - (int(index.lane_depth[thread]) - 1)
    side = next(
        lane for lane in range(len(index.lane_depth))
        if index.trace.lanes[lane].name == "stream 20"
    )  # fmt: skip
    y = AXIS_H + int(canvas.row_y[index.lane_first_row[side]]) + 4 - canvas.scroll_y
    qtbot.mouseClick(canvas, Qt.MouseButton.RightButton, pos=QPoint(20, y))
    assert canvas.pinned == [side] and int(canvas.shown_rows[0]) == int(index.lane_first_row[side])
    # kernels coloured by name when wide enough to see
    canvas.fit()
    first = int(np.flatnonzero(index.trace.kind == KIND["kernel"])[0])
    canvas.select(first, center=True)
    canvas.set_view(canvas.t0 - 2_000_000, canvas.t1 + 2_000_000)
    image = canvas.grab().toImage()
    ratio = round(image.devicePixelRatio())  # 2 on a HiDPI screen: the raster is physical
    row_y = (AXIS_H + canvas._row_top(index.row_of(first)) + ROW_MID - canvas.scroll_y) * ratio
    colours = {
        _rgb(image, x, row_y)
        for x in range((canvas.header_w + 2) * ratio, (canvas.width() - 2) * ratio)
    }
    from deploylens.gui.timeline.raster import KERNEL_COLORS

    assert len(colours & set(KERNEL_COLORS)) >= 2  # three names, at least two colours seen


def test_the_kernel_table_and_histogram_start_on_the_heaviest_kernel(qtbot, tmp_path: Path) -> None:
    path = write_chrome(_gpu_trace(), tmp_path / "gpu.json")
    panel = open_panel(qtbot, path)
    totals = [panel.kernels.item(r, 2).value for r in range(panel.kernels.rowCount())]
    assert totals == sorted(totals, reverse=True)  # not by name descending
    # Durations read whole in the unit that fits (the sorted column was elided: "174....78").
    shown = panel.kernels.item(0, 2).text()
    assert shown.endswith((" µs", " ms", " s")) and "…" not in shown
    fm = panel.kernels.fontMetrics()
    for column in range(1, panel.kernels.columnCount()):
        widest = max(fm.horizontalAdvance(panel.kernels.item(r, column).text())
                     for r in range(panel.kernels.rowCount()))  # fmt: skip
        assert panel.kernels.columnWidth(column) >= widest
    heaviest = panel.kernels.item(0, 0).text()
    assert panel.histogram_box.plot.plotItem.titleLabel.text.startswith(heaviest[:20])
    (curve,) = panel.histogram_box.plot.plotItem.listDataItems()
    xs, ys = curve.getData()
    (x0, x1), (_, y1) = panel.histogram_box.plot.plotItem.viewRange()
    assert ys.max() > 0 and x0 <= xs.min() and xs.max() <= x1 and y1 >= ys.max()  # in view


def test_kernel_names_and_lane_labels_get_room(qtbot, tmp_path: Path) -> None:
    """Kernel names were elided to ~50 px at every size and the lane labels' column stayed
    240 px at 4K: the name column now starts as wide as its names need (up to ~45 % of the
    table, its middle elided beyond, the whole name in the tooltip), refitted on resize, and the
    lane column grows with the view up to HEADER_SHARE."""
    path = write_chrome(_gpu_trace(), tmp_path / "gpu.json")
    panel = open_panel(qtbot, path)
    tab = panel.kernels.parentWidget()
    assert tab is not None
    panel.tabs.setCurrentIndex(panel.tabs.indexOf(tab))
    qtbot.wait(20)
    table = panel.kernels
    names = [table.item(r, 0).text() for r in range(table.rowCount())]
    longest = max(table.fontMetrics().horizontalAdvance(n) for n in names)
    width = table.columnWidth(0)
    assert width >= min(longest, 220), (width, longest)
    assert table.item(0, 0).toolTip() == table.item(0, 0).text()
    panel.resize(3000, 900)
    qtbot.wait(20)
    assert table.columnWidth(0) >= width  # more room: the name takes it first
    canvas = panel.canvas
    need = max(
        canvas.fontMetrics().horizontalAdvance("▾ 📌 " + canvas.index.row_title(int(r)))
        for r in canvas.index.lane_first_row[:-1]
    )
    assert canvas.header_w >= min(need, HEADER_SHARE * canvas.width())
    assert HEADER_W <= canvas.header_w <= max(HEADER_W, HEADER_SHARE * canvas.width())


def test_a_large_file_is_drawn_while_it_loads(qtbot, tmp_path: Path, monkeypatch) -> None:
    """Partial views (made small here: 64 KB steps, the first at once): each a real paint of the
    events read so far, fewer than the file's, in file order; then the whole trace and its
    statistics replace them."""
    from deploylens.core.trace import chrome_file, partial

    monkeypatch.setattr(chrome_file, "SEQUENTIAL_CHUNK", 64 << 10)
    monkeypatch.setattr(partial, "FIRST_VIEW_EVENTS", 1)
    monkeypatch.setenv("DEPLOYLENS_IMPORT_WORKERS", "1")
    path = write_chrome(make_trace(20_000), tmp_path / "t.json")
    panel = open_panel(qtbot, write_chrome(make_trace(3000), tmp_path / "before.json"))
    assert panel.kernels.rowCount() > 0  # an earlier trace's statistics, about to be replaced
    seen: list[tuple[int, str]] = []

    def drawn(result: tuple[Trace, TimelineIndex]) -> None:
        assert panel.trace is result[0]  # the panel already shows it (connected before us)
        panel.canvas.grab()
        seen.append((len(result[0]), panel.status.text()))
        # no statistics of another trace beside a partial one
        assert "Statistics follow the complete file" in panel.summary.toPlainText()
        assert panel.kernels.rowCount() == 0

    task = panel.load(str(path))
    task.sig_partial.connect(drawn)
    qtbot.waitUntil(
        lambda: panel.path == str(path) and panel.stats is not None and "Importing" not in
        panel.status.text(), timeout=JOB_TIMEOUT_MS,
    )  # fmt: skip
    assert panel.trace is not None
    total = len(panel.trace)
    assert total == 20_000 and "20,000 events" in panel.status.text()
    assert seen, "no partial view was drawn"
    counts = [n for n, _ in seen]
    assert counts == sorted(counts) and 0 < counts[-1] < total
    assert all("partial view" in text and f"{n:,} events" in text for n, text in seen)


def test_the_file_opened_last_is_the_one_shown(qtbot, tmp_path: Path, monkeypatch) -> None:
    """A slow first file that finishes after a second one was opened must not replace it."""
    import threading

    first = write_chrome(make_trace(500), tmp_path / "first.json")
    second = write_chrome(make_trace(700), tmp_path / "second.json")
    from deploylens.gui.timeline.loading import open_trace as real

    release = threading.Event()

    def held(path: str, partial: Any = None) -> Any:
        if path == str(first):
            release.wait(30)  # the first file "loads" until the second is shown
        return real(path, partial)

    monkeypatch.setattr(timeline_panel, "open_trace", held)
    panel = TimelinePanel(None)
    qtbot.addWidget(panel)
    slow = panel.load(str(first))
    panel.load(str(second))
    qtbot.waitUntil(lambda: panel.path == str(second), timeout=JOB_TIMEOUT_MS)
    release.set()
    slow.worker.join(30)
    qtbot.wait(200)  # the first file's queued result arrives, and is dropped
    assert panel.path == str(second) and panel.trace is not None and len(panel.trace) == 700


def test_zoom_out_and_pan_stop_at_the_trace(qtbot, tmp_path: Path) -> None:
    """A 6.8 s trace could be zoomed out to −5 s … 15 s of nothing (issue 45): the widest view
    is the whole trace with its margin, and panning stops at either end."""
    path = write_chrome(_gpu_trace(), tmp_path / "gpu.json")
    panel = open_panel(qtbot, path)
    canvas = panel.canvas
    full = canvas.full_window()
    assert full is not None
    for _ in range(6):
        canvas.zoom(3.0)
    assert (canvas.t0, canvas.t1) == full
    canvas.zoom(0.1)  # in, then far past either end
    span = canvas.t1 - canvas.t0
    canvas.pan(-50.0)
    assert canvas.t0 == full[0] and canvas.t1 - canvas.t0 == span
    canvas.pan(50.0)
    assert canvas.t1 == full[1] and canvas.t1 - canvas.t0 == span
