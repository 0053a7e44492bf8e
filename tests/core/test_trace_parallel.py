"""The Chrome-trace import on several processes (core/trace/chrome_parallel.py): the same trace a
sequential import makes, ids included, plain and gzipped; a cut that falls inside a string reads
the file again sequentially; a bad value in a worker is the same clear error; no worker outlives
the import. Pieces are made small so a 1 MB file the test writes is cut ~100 times."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.errors import UserError
from deploylens.core.trace import (
    chrome,
    chrome_file,
    chrome_parallel,
    import_workers,
    nsys,
    nsys_parallel,
)
from deploylens.core.trace.export import write_chrome
from deploylens.core.trace.model import Trace
from tests.helpers.synthetic_trace import make_trace, write_nsys_sqlite

COLUMNS = ("start", "dur", "lane", "kind", "name", "corr", "nbytes", "detail")


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chrome_parallel, "PIECE", 8 << 10)
    monkeypatch.setattr(chrome_parallel, "TAIL", 4 << 10)
    monkeypatch.setattr(chrome_parallel, "PARALLEL_FROM", 0)
    monkeypatch.setenv(import_workers.WORKERS_ENV, "2")


def children() -> set[int]:
    """This process's live children, from /proc (Linux)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found |= {int(pid) for pid in text.split()}
    return {pid for pid in found if Path(f"/proc/{pid}").exists()}


def sequential(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trace:
    with monkeypatch.context() as m:
        m.setenv(import_workers.WORKERS_ENV, "1")
        return chrome_file.load_chrome(path)


def same(a: Trace, b: Trace) -> None:
    for key in COLUMNS:
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert a.names == b.names and a.lanes == b.lanes
    assert a.meta == b.meta


@pytest.mark.parametrize("gzipped", [False, True])
def test_pieces_on_two_workers_make_the_sequential_trace(
    small_pieces: None, gzipped: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_chrome(make_trace(3000, lanes=6), tmp_path / "t.json")
    if gzipped:
        gz = tmp_path / "t.json.gz"
        gz.write_bytes(gzip.compress(Path(path).read_bytes()))
        path = gz
    before = children()
    assert chrome_parallel.worth_it(Path(path))
    seen: list[int] = []
    state = chrome.ChromeImport()
    assert chrome_parallel.load_parallel(Path(path), state, seen.append, 2)
    assert len(seen) > 20 and seen == sorted(seen)  # many pieces, progress in file order
    same(state.finish(Path(path)), sequential(Path(path), monkeypatch))
    same(chrome_file.load_chrome(path), sequential(Path(path), monkeypatch))
    assert children() <= before  # every worker has ended


def test_a_gzipped_file_is_weighed_by_its_inflated_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace compresses ~10×: the compressed size alone kept a 3 GB trace in one process."""
    plain = write_chrome(make_trace(2000), tmp_path / "t.json")
    data = Path(plain).read_bytes()
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(data))
    assert chrome_parallel.inflated_size(gz) == len(data)
    assert chrome_parallel.inflated_size(Path(plain)) == len(data)
    monkeypatch.setenv(import_workers.WORKERS_ENV, "2")
    monkeypatch.setattr(chrome_parallel, "PARALLEL_FROM", len(data))
    assert gz.stat().st_size < len(data) and chrome_parallel.worth_it(gz)


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("piece", [8 << 10, 64 << 10])
def test_lists_after_the_events_go_to_the_sequential_reader(
    small_pieces: None, gzipped: bool, piece: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kineto ends a file with more lists of objects (``},{`` outside the events; here 2.5 KB,
    under the 4 KB tail): the cuts stop a tail before the end — in the last inflated block too,
    which is cut short of its end when it is long (64 KB pieces) — so the pass stays parallel
    and nearly all of the file goes to the workers."""
    monkeypatch.setattr(chrome_parallel, "PIECE", piece)
    events = json.loads(Path(write_chrome(make_trace(3000), tmp_path / "t.json")).read_text())
    events["deviceProperties"] = [{"id": i, "name": "NVIDIA H100 " * 20} for i in range(8)]
    data = json.dumps(events).encode()
    path = tmp_path / ("t.json.gz" if gzipped else "t.json")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    state = chrome.ChromeImport()
    assert chrome_parallel.load_parallel(path, state, None, 2)
    same(state.finish(path), sequential(path, monkeypatch))
    if gzipped:
        *_, (last, _, tail) = chrome_parallel._gzip_pieces(path, piece, chrome_parallel.TAIL)
        assert last is None and len(tail) < 2 * chrome_parallel.TAIL
    else:
        _, at = chrome_parallel._plain_pieces(path, piece, chrome_parallel.TAIL)
        assert len(data) - at < 2 * chrome_parallel.TAIL


def test_a_cut_inside_a_string_reads_the_file_again_in_one_process(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names full of ``},{`` put most cuts inside strings: the parallel pass gives up, and the
    answer is the sequential one."""
    name = "weird},{" * 40
    events = [
        {"ph": "X", "cat": "kernel", "name": f"{name}{i % 7}", "pid": 0, "tid": 7,
         "ts": 1000.0 + i, "dur": 0.5, "args": {"stream": 7, "device": 0}}
        for i in range(2000)
    ]  # fmt: skip
    path = tmp_path / "weird.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert not chrome_parallel.load_parallel(path, chrome.ChromeImport(), None, 2)
    messages: list[str] = []
    trace = chrome_file.load_chrome(path, lambda done, text: messages.append(text))
    assert "reading again in one process" in messages
    assert len(trace.start) == 2000
    same(trace, sequential(path, monkeypatch))


def test_a_bad_value_in_a_worker_is_the_same_clear_error(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 10.0 + i,
         "dur": 1e30 if i == 1500 else 1.0}
        for i in range(3000)
    ]  # fmt: skip
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"traceEvents": events}))
    before = children()
    with pytest.raises(UserError) as parallel:
        chrome_file.load_chrome(path)
    with pytest.raises(UserError) as alone:
        sequential(path, monkeypatch)
    assert str(parallel.value) == str(alone.value) and "corrupt" in str(parallel.value)
    assert children() <= before


def test_small_files_and_frozen_apps_stay_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_chrome(make_trace(100), tmp_path / "t.json")
    assert not chrome_parallel.worth_it(Path(path))  # under PARALLEL_FROM
    monkeypatch.setattr(chrome_parallel, "PARALLEL_FROM", 0)
    monkeypatch.setenv(import_workers.WORKERS_ENV, "1")
    assert not chrome_parallel.worth_it(Path(path))
    monkeypatch.delenv(import_workers.WORKERS_ENV)
    monkeypatch.setattr("sys.frozen", True, raising=False)
    assert import_workers.workers() == 1


def test_workers_are_the_cores_nothing_else_is_using(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy or small machine the import stays in one process: two workers cost 1.7x the
    CPU of one and were slower in wall time on 2 cores."""
    monkeypatch.delenv(import_workers.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(2)), raising=False)
    for load, expected in ((0.0, 1), (0.8, 1), (6.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert import_workers.workers() == expected, load
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    for load, expected in ((0.0, 8), (9.6, 6), (12.6, 3), (13.6, 1), (30.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert import_workers.workers() == expected, load
    monkeypatch.setenv(import_workers.WORKERS_ENV, "3")
    assert import_workers.workers() == 3  # the environment's word is final


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nsys_parallel, "PARALLEL_FROM", 0)
    monkeypatch.setattr(nsys_parallel, "RANGE_ROWS", 300)
    monkeypatch.setattr(nsys, "BATCH", 256)
    monkeypatch.setenv(import_workers.WORKERS_ENV, "2")


def test_an_nsys_export_on_two_workers_makes_the_sequential_trace(
    small_ranges: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rowid ranges fetched by the workers, cut into the reader's own batches: the same trace,
    ids included (a batch boundary moved would intern names in another order)."""
    path = write_nsys_sqlite(make_trace(6000, lanes=6), tmp_path / "t.sqlite")
    before = children()
    assert nsys_parallel.worth_it(Path(path))
    parallel = nsys.load_nsys(path)
    with monkeypatch.context() as m:
        m.setenv(import_workers.WORKERS_ENV, "1")
        alone = nsys.load_nsys(path)
    same(parallel, alone)
    assert children() <= before


def test_a_bad_cell_in_a_workers_range_is_the_same_clear_error(
    small_ranges: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(write_nsys_sqlite(make_trace(6000), tmp_path / "t.sqlite"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 1700")
    before = children()
    with pytest.raises(UserError) as parallel:
        nsys.load_nsys(path)
    with monkeypatch.context() as m:
        m.setenv(import_workers.WORKERS_ENV, "1")
        with pytest.raises(UserError) as alone:
            nsys.load_nsys(path)
    assert str(parallel.value) == str(alone.value) and "'soon' in start" in str(alone.value)
    assert children() <= before


def test_workers_that_cannot_start_leave_the_import_to_this_process(
    small_pieces: None, small_ranges: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker interpreter without DeployLens (here: a module that does not exist) is not an
    error: both readers read the file themselves, and the answer is the sequential one."""
    trace = make_trace(4000, lanes=4)
    chrome_path = Path(write_chrome(trace, tmp_path / "t.json"))
    nsys_path = Path(write_nsys_sqlite(trace, tmp_path / "t.sqlite"))
    with monkeypatch.context() as m:
        m.setenv(import_workers.WORKERS_ENV, "1")
        chrome_alone, nsys_alone = chrome_file.load_chrome(chrome_path), nsys.load_nsys(nsys_path)
    monkeypatch.setattr(import_workers, "WORKER_MODULE", "deploylens.no_such_module")
    before = children()
    same(chrome_file.load_chrome(chrome_path), chrome_alone)
    same(nsys.load_nsys(nsys_path), nsys_alone)
    assert children() <= before
