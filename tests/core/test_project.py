"""Project files: round trip, atomic save, newer schema, unknown tables kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deploylens.core.errors import ProjectFileError, UserError
from deploylens.core.project import SCHEMA_VERSION, Project, load_project


def test_roundtrip_with_relative_model_path(tmp_path: Path) -> None:
    model = tmp_path / "models" / "net.onnx"
    model.parent.mkdir()
    model.write_bytes(b"")
    path = Project(model_path=model).save(tmp_path / "p.deploylens.toml")
    text = path.read_text()
    assert 'path = "models/net.onnx"' in text and f"schema = {SCHEMA_VERSION}" in text
    assert load_project(path).model_path == model.resolve()


def test_unknown_tables_survive_a_load_save_cycle(tmp_path: Path) -> None:
    path = tmp_path / "p.deploylens.toml"
    path.write_text(
        '[deploylens]\nschema = 1\n[model]\npath = "m.onnx"\nnote = "keep"\n'
        '[build]\nprecision = "fp16"\nprofiles = [{min = [1, 3]}]\n'
    )
    project = load_project(path)
    project.save()
    again = load_project(path)
    assert again.tables["build"] == {"precision": "fp16", "profiles": [{"min": [1, 3]}]}
    assert again.tables["model"]["note"] == "keep"


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.deploylens.toml"
    original = "[deploylens]\nschema = 99\n[model]\npath = 'm.onnx'\n"
    path.write_text(original)
    with pytest.raises(ProjectFileError, match=r"newer DeployLens .*schema 99.*Upgrade"):
        load_project(path)
    assert path.read_text() == original


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("this is = = not toml", "not valid TOML"), ("[other]\nx = 1\n", "not a DeployLens project")],
)
def test_bad_project_files(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.deploylens.toml"
    path.write_text(content)
    with pytest.raises(ProjectFileError, match=fragment):
        load_project(path)


def test_failed_save_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Project(model_path=tmp_path / "a.onnx").save(tmp_path / "p.deploylens.toml")
    before = path.read_text()

    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(ProjectFileError, match="No space left on device"):
        Project(model_path=tmp_path / "b.onnx").save(path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.deploylens.toml"]


def test_a_schema_1_project_opens_with_its_panels_tables_as_requests(tmp_path: Path) -> None:
    """Schema 2 keeps each job's request in its table; a project saved before (the Build and
    Surgery panels' own keys) is migrated on opening and reads back as the same requests."""
    from deploylens.core.surgery.request import SurgeryRequest
    from deploylens.core.trt.request import BuildRequest

    path = tmp_path / "old.deploylens.toml"
    path.write_text(
        '[deploylens]\nschema = 1\n[model]\npath = "m.onnx"\n'
        '[build]\ntrt_version = "10.16"\nlayers_json = "m.layers.json"\n'
        '[build.settings]\nprecisions = ["fp16"]\nworkspace_mb = 512\n'
        '[surgery]\nbase = "/models/m.onnx"\n[[surgery.steps]]\nop = "fold"\n'
    )
    project = load_project(path)
    build = BuildRequest.from_project(project.tables["build"]["request"], "build", model="m.onnx")
    assert build.version == "10.16" and build.settings.precisions == ["fp16"]
    assert build.settings.workspace_mb == 512
    assert project.tables["build"]["layers_json"] == "m.layers.json"  # the panel's own, kept
    surgery = SurgeryRequest.from_project(project.tables["surgery"]["request"], "surgery")
    assert surgery.model == "/models/m.onnx" and [s.op for s in surgery.steps] == ["fold"]
    project.save()
    assert "schema = 2" in path.read_text()
    again = load_project(path)
    assert again.tables["build"] == project.tables["build"]  # read as saved: nothing to migrate
    # a request field a shared project misspells is said, never dropped
    again.tables["surgery"]["request"]["stepz"] = []
    with pytest.raises(UserError, match="unknown setting 'stepz' \\(did you mean 'steps'\\?\\)"):
        SurgeryRequest.from_project(again.tables["surgery"]["request"], "surgery")
