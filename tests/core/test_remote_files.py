"""What a remote job sends and fetches, checked without a host: every request's file fields
name real fields, a CLI line's ``--host`` is the remote machine (profile's old ``--host
pinned`` still means its buffers), and a bundle's digest follows names and bytes."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from deploylens.core.cli import take_remote
from deploylens.core.requests import REQUESTS, request_class
from deploylens.core.worker.remote import Host
from deploylens.core.worker.transfer import _rewrite, bundle


def _field_type(cls: type, dotted: str) -> object:
    """The type of ``a.b.c`` through nested dataclasses (Optional unwrapped)."""
    current: object = cls
    for part in dotted.split("."):
        assert dataclasses.is_dataclass(current), f"{dotted}: {current} is not a dataclass"
        hints = typing.get_type_hints(current)
        assert part in hints, f"{cls.__name__}.FILES names {dotted!r}, which is not a field"
        current = hints[part]
        args = [a for a in typing.get_args(current) if a is not type(None)]
        if typing.get_origin(current) in (typing.Union, type(int | None)) and len(args) == 1:
            current = args[0]
    return current


@pytest.mark.parametrize("job", sorted(REQUESTS))
def test_every_file_field_is_a_text_field_of_its_request(job: str) -> None:
    cls = request_class(job)
    for field, kind in cls.FILES.items():
        assert kind in ("in", "out", "outdir", "inout")
        assert _field_type(cls, field) is str, f"{job}: {field} is not a path (str) field"


def test_requests_that_read_or_write_files_name_them() -> None:
    """A request with a path-like field and no FILES would run remotely on a path the host
    does not have: each job that takes a model says so."""
    for job in REQUESTS:
        cls = request_class(job)
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # each is a @dataclass
        for candidate in ("model", "path", "out", "output", "engine", "data"):
            if candidate in names and _field_type(cls, candidate) is str:
                assert candidate in cls.FILES, f"{job}.{candidate} is not in FILES"


def test_host_options_are_taken_anywhere_and_profile_buffers_keep_their_old_spelling() -> None:
    rest, host, python = take_remote(["validate", "m.onnx", "--host", "me@gpu:2222", "--json"])
    assert rest == ["validate", "m.onnx", "--json"] and host == "me@gpu:2222" and python == ""
    rest, host, _ = take_remote(["profile", "m.onnx", "--host", "pageable", "--out", "t.json"])
    assert host == "" and rest == [
        "profile",
        "m.onnx",
        "--host-buffers",
        "pageable",
        "--out",
        "t.json",
    ]
    rest, host, python = take_remote(["sweep", "m", "--host=gpu", "--remote-python=/opt/py"])
    assert host == "gpu" and python == "/opt/py" and rest == ["sweep", "m"]
    assert Host.parse("me@gpu:2222") == Host("me@gpu", 2222) and str(Host.parse("gpu")) == "gpu"
    malformed = ("root@@bad host:99999", "root@@bad:22", "me@gpu:0", "me@:22", "@gpu", "x;rm")
    for bad in malformed:
        with pytest.raises(ValueError, match="is not a host"):
            Host.parse(bad)
    with pytest.raises(ValueError):
        Host.parse("-oProxyCommand=evil")  # an option smuggled in as a host


def test_a_bundle_digest_follows_names_and_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.npy").write_bytes(b"1" * 10)
    (folder / "sub" / "b.npy").write_bytes(b"2" * 10)
    first = bundle(folder)
    assert [rel for _, rel, _, _ in first.files] == ["data/a.npy", "data/sub/b.npy"]
    assert bundle(folder).digest == first.digest and first.total == 20
    (folder / "sub" / "b.npy").rename(folder / "sub" / "c.npy")  # same bytes, other name
    assert bundle(folder).digest != first.digest
    (folder / "sub" / "c.npy").write_bytes(b"3" * 10)
    assert bundle(folder).digest not in (first.digest,)


def test_remote_paths_in_a_result_become_local_ones_also_inside_sentences() -> None:
    mapping = {"/h/files/ab/data": "/mine/data", "/h/out/x/m.onnx": "/mine/m.onnx"}
    result = {"path": "/h/out/x/m.onnx", "rows": ["/h/files/ab/data/s1.npy"],
              "note": "the first 8 samples of /h/files/ab/data (calibration)"}  # fmt: skip
    assert _rewrite(result, mapping) == {
        "path": "/mine/m.onnx",
        "rows": ["/mine/data/s1.npy"],
        "note": "the first 8 samples of /mine/data (calibration)",
    }


def test_a_content_folder_is_filled_once_and_never_left_half_made(tmp_path: Path) -> None:
    """Ray's code and a task's inputs unpack into a folder named by their digest: a fill that
    fails leaves nothing there, a complete one is never filled again."""
    from deploylens.core.cluster import _once

    target = tmp_path / "0123abcd"

    def broken(partial: Path) -> None:
        (partial / "model.onnx").write_bytes(b"half")
        raise ConnectionError("the object store went away")

    with pytest.raises(ConnectionError):
        _once(target, broken)
    assert not target.exists() and list(tmp_path.iterdir()) == []
    calls: list[Path] = []

    def fill(partial: Path) -> None:
        calls.append(partial)
        (partial / "model.onnx").write_bytes(b"whole")

    assert _once(target, fill) == target and _once(target, fill) == target
    assert len(calls) == 1 and (target / "model.onnx").read_bytes() == b"whole"
