"""A project copied to another folder finds its model and data at the absolute paths saved with it.

The project stored only paths relative to itself: a copy in a folder of another depth looked for
``../../m/model.onnx`` from there and stopped ("the model ... was not found"). Projects now save each
file field's absolute path too (``absolute_paths``); a load tries the relative path first, then the
absolute one (with a note), and checks the model's sha256 whichever it uses.
"""

from __future__ import annotations

import json
import shutil

import pytest

from workbench import cli
from workbench.core import api
from workbench.core.errors import ProjectError


@pytest.fixture
def job(corpus, tmp_path, capsys):
    """A project saved in A/ naming a model and calib data in B/, its replay's bytes, and a copy in C/d/
    (so its relative paths "../B/..." miss)."""
    d = corpus / "digits_cnn"
    for sub in ("A", "B", "C/d"):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(d / "model_opset17.onnx", tmp_path / "B" / "model.onnx")
    shutil.copy(d / "calib.npz", tmp_path / "B" / "calib.npz")
    proj = tmp_path / "A" / "job.wbproj"
    assert cli.main(["quantize", str(tmp_path / "B" / "model.onnx"), "--data", str(tmp_path / "B" / "calib.npz"),
                     "--samples", "16", "--no-search", "-o", str(tmp_path / "first.onnx"),
                     "--save-project", str(proj)]) == 0
    assert cli.main(["quantize", str(proj), "-o", str(tmp_path / "replay.onnx")]) == 0
    copy = tmp_path / "C" / "d" / "job.wbproj"
    shutil.copy(proj, copy)
    capsys.readouterr()
    return proj, copy


def test_saved_project_holds_relative_and_absolute_paths(job, tmp_path):
    doc = json.loads(job[0].read_text())
    assert doc["model"]["path"] == "../B/model.onnx" and doc["data"]["path"] == "../B/calib.npz"
    assert doc["absolute_paths"] == {"model.path": str(tmp_path.resolve() / "B" / "model.onnx"),
                                     "data.path": str(tmp_path.resolve() / "B" / "calib.npz")}


def test_copied_project_replays_to_the_same_bytes_and_says_which_path(job, tmp_path, capsys):
    _, copy = job
    assert cli.main(["quantize", str(copy), "-o", str(tmp_path / "copy.onnx")]) == 0
    assert (tmp_path / "copy.onnx").read_bytes() == (tmp_path / "replay.onnx").read_bytes()
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "absolute path saved in the project" in line]
    assert len(notes) == 2, err
    assert notes[0].startswith("note: project field model.path:") and str(tmp_path.resolve() / "B" / "model.onnx") in notes[0]
    assert notes[1].startswith("note: project field data.path:") and str(tmp_path.resolve() / "B" / "calib.npz") in notes[1]


def test_copied_project_whose_model_is_nowhere_names_field_and_both_paths(job, tmp_path, capsys):
    _, copy = job
    (tmp_path / "B" / "model.onnx").rename(tmp_path / "gone.onnx")
    assert cli.main(["quantize", str(copy), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    root = tmp_path.resolve()
    assert err.startswith(f"error: {copy}: project field model.path: the model was not found (moved or deleted): "
                          f"tried {root / 'C' / 'B' / 'model.onnx'} (relative to the project) and "
                          f"{root / 'B' / 'model.onnx'} (the absolute path saved in it).")
    assert "--model PATH" in err and not (tmp_path / "out.onnx").exists()


def test_copied_project_whose_absolute_path_is_another_file_of_that_name_is_refused(job, corpus, tmp_path, capsys):
    _, copy = job
    shutil.copy(corpus / "digits_cnn" / "model_opset13.onnx", tmp_path / "B" / "model.onnx")
    assert cli.main(["quantize", str(copy), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{tmp_path.resolve() / 'B' / 'model.onnx'} (the absolute path saved in it) is another file (sha256" in err
    assert not (tmp_path / "out.onnx").exists()
    with pytest.raises(ProjectError, match="is another file"):
        api.load_project(copy)


def test_a_changed_file_at_the_relative_path_is_refused_not_passed_over(job, corpus, tmp_path):
    """A file where the copy's relative path points that is not the project's model (retrained there): refused
    as changed, though the absolute path still holds the original (quantizing that would hide the change)."""
    _, copy = job
    (tmp_path / "C" / "B").mkdir()
    shutil.copy(corpus / "digits_cnn" / "model_opset13.onnx", tmp_path / "C" / "B" / "model.onnx")
    with pytest.raises(ProjectError) as err:
        api.load_project(copy)
    assert err.value.message.startswith(f"{copy}: the model {tmp_path.resolve() / 'C' / 'B' / 'model.onnx'} changed "
                                        "since the project was saved (sha256")


def test_the_relative_path_is_tried_first(job, tmp_path):
    proj, _ = job
    moved = tmp_path / "A2"
    shutil.copytree(tmp_path / "A", moved)
    shutil.copytree(tmp_path / "B", tmp_path / "B2")
    doc = json.loads((moved / "job.wbproj").read_text())
    doc["model"]["path"], doc["data"]["path"] = "../B2/model.onnx", "../B2/calib.npz"
    doc["absolute_paths"] = {"model.path": str(tmp_path / "B2" / "model.onnx"),
                             "data.path": str(tmp_path / "B2" / "calib.npz")}
    (moved / "job.wbproj").write_text(json.dumps(doc))
    (tmp_path / "B" / "model.onnx").unlink()  # the original: still named by the first project
    project = api.load_project(moved / "job.wbproj")
    assert project.model_path(moved / "job.wbproj") == tmp_path.resolve() / "B2" / "model.onnx"
    assert project.path_notes == []


def test_project_without_absolute_paths_still_loads_and_says_the_one_path(job, tmp_path):
    proj, copy = job
    for p in (proj, copy):
        doc = json.loads(p.read_text())
        del doc["absolute_paths"]
        p.write_text(json.dumps(doc))
    project = api.load_project(proj)
    assert project.model_path(proj) == tmp_path.resolve() / "B" / "model.onnx" and project.path_notes == []
    with pytest.raises(ProjectError) as err:
        api.load_project(copy)
    assert err.value.message == (f"{copy}: project field model.path: the model {tmp_path.resolve() / 'C' / 'B' / 'model.onnx'} "
                                 "was not found (moved or deleted).")


def test_a_hand_edited_path_does_not_take_the_old_absolute_one(job, tmp_path):
    from workbench.core.pipeline.project import file_candidates

    _, copy = job
    doc = json.loads(copy.read_text())
    doc["data"]["path"] = "../B/other.npz"  # edited: the saved absolute path is of calib.npz
    copy.write_text(json.dumps(doc))
    project = api.load_project(copy)
    assert file_candidates(project, copy, "data.path") == [tmp_path.resolve() / "C" / "B" / "other.npz"]
    assert project.data_spec(copy)["path"] == str(tmp_path.resolve() / "C" / "B" / "other.npz")  # normalised


def test_eval_files_and_metric_fall_back_too(job, tmp_path):
    proj, copy = job
    (tmp_path / "B" / "eval.npz").write_bytes(b"")
    (tmp_path / "B" / "metric.py").write_text("")
    project = api.load_project(proj)
    project.model.path = str(tmp_path / "B" / "model.onnx")
    project.evaluation = {"data": str(tmp_path / "B" / "eval.npz"), "metric": str(tmp_path / "B" / "metric.py"),
                          "samples": None}
    saved = api.save_project(project, tmp_path / "A" / "eval.wbproj")  # the CLI's job made job.wbproj an input
    assert json.loads(saved.read_text())["evaluation"]["data"] == "../B/eval.npz"
    shutil.copy(saved, copy)
    spec = api.load_project(copy).evaluation_spec(copy)
    assert spec["data"] == str(tmp_path.resolve() / "B" / "eval.npz")
    assert spec["metric"] == str(tmp_path.resolve() / "B" / "metric.py")


def _path_notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "the absolute path saved in the project" in line]


@pytest.mark.parametrize("verb", ["analyze", "sweep", "report"])
def test_analyze_sweep_and_report_of_a_copied_project_say_which_paths_they_used(job, tmp_path, capsys, verb):
    _, copy = job
    out = ["-o", str(tmp_path / "r.html")] if verb == "report" else []
    assert cli.main([verb, str(copy), *out]) == 0
    notes = _path_notes(capsys.readouterr().err)
    assert [n.split(":")[1] for n in notes] == [" project field model.path", " project field data.path"], notes


def test_retarget_of_a_copied_project_notes_the_data_it_took_from_the_absolute_path(job, corpus, tmp_path, capsys):
    """``quantize PROJECT --model NEW.onnx`` calibrates (and saves in a new project) the project's data: found at
    its absolute path, it is noted as a replay notes it; the model is the one given, so no model.path note."""
    _, copy = job
    new = tmp_path / "new.onnx"
    shutil.copy(corpus / "digits_cnn" / "model_opset13.onnx", new)
    assert cli.main(["quantize", str(copy), "--model", str(new), "-o", str(tmp_path / "n.onnx")]) == 0
    notes = _path_notes(capsys.readouterr().err)
    assert len(notes) == 1 and notes[0].startswith("note: project field data.path:"), notes
    assert str(tmp_path.resolve() / "B" / "calib.npz") in notes[0]
    # --data replaces the project's data: nothing to note
    assert cli.main(["quantize", str(copy), "--model", str(new), "--data", str(tmp_path / "B" / "calib.npz"),
                     "-o", str(tmp_path / "n2.onnx")]) == 0
    assert _path_notes(capsys.readouterr().err) == []


def test_a_replay_does_not_note_the_evaluation_files_the_cli_does_not_read(job, tmp_path, capsys):
    _, copy = job
    doc = json.loads(copy.read_text())
    doc["evaluation"] = {"data": "../B/calib.npz"}
    doc["absolute_paths"]["evaluation.data"] = str(tmp_path.resolve() / "B" / "calib.npz")
    copy.write_text(json.dumps(doc))
    assert any(n.startswith("project field evaluation.data:") for n in api.load_project(copy).path_notes)
    assert cli.main(["quantize", str(copy), "-o", str(tmp_path / "o.onnx")]) == 0
    notes = _path_notes(capsys.readouterr().err)
    assert [n.split(":")[1] for n in notes] == [" project field model.path", " project field data.path"], notes
