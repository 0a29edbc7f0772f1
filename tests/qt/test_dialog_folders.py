"""File dialogs start in the last folder used for their purpose (open model, open project, export,
data), kept in the app's settings, not always in the open model's folder: a new user exported to
/tmp/out and saved a project in /tmp/projects, and every next dialog went back to the corpus folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bundled_example import EXAMPLE
from PySide6.QtWidgets import QFileDialog

from workbench.qt import settings


class Calls(list):
    """(dialog, directory argument) of each QFileDialog call; each returns ``answer`` (a path, "" = cancel)."""

    answer = ""


@pytest.fixture
def file_dialogs(monkeypatch):
    calls = Calls()

    def fake(kind):
        def dialog(parent, caption="", directory="", *args, **kwargs):
            calls.append((kind, str(directory)))
            return calls.answer if kind == "dir" else (calls.answer, args[1] if len(args) > 1 else "")
        return staticmethod(dialog)

    monkeypatch.setattr(QFileDialog, "getOpenFileName", fake("open"))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake("save"))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", fake("dir"))
    return calls


@pytest.fixture
def model_in_tmp(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    for f in EXAMPLE.glob("digits_cnn*"):
        shutil.copy(f, folder / f.name)
    return folder / "digits_cnn.onnx"


def _folders(tmp_path, *names):
    out = []
    for name in names:
        (tmp_path / name).mkdir()
        out.append(tmp_path / name)
    return out


def test_save_dialogs_start_in_the_last_folder_of_their_purpose(window, open_file, file_dialogs, model_in_tmp,
                                                                tmp_path):
    win = window
    open_file(win, model_in_tmp)
    exports, projects = _folders(tmp_path, "exports", "projects")
    settings.remember_folder("export", exports / "old.qdq.onnx")
    settings.remember_folder("project", projects)
    win.export_dialog()
    win.export_report_dialog()
    win.export_picture_dialog()
    win.save_project_as()
    assert file_dialogs == [("save", str(exports / "digits_cnn.qdq.onnx")),
                            ("save", str(exports / "digits_cnn.report.html")),
                            ("save", str(exports / "digits_cnn.png")),
                            ("save", str(projects / "digits_cnn.wbproj"))]


def test_a_chosen_folder_is_where_the_next_dialog_starts(window, open_file, file_dialogs, model_in_tmp, tmp_path,
                                                         monkeypatch):
    win = window
    open_file(win, model_in_tmp)
    (elsewhere,) = _folders(tmp_path, "elsewhere")
    monkeypatch.setattr(win, "export_report_to", lambda path: None)  # the dialog's choice alone is checked
    win.export_dialog()  # no export yet: beside the model
    file_dialogs.answer = str(elsewhere / "digits.report.html")
    win.export_report_dialog()
    file_dialogs.answer = ""
    win.export_dialog()
    assert [d for _k, d in file_dialogs] == [str(model_in_tmp.with_name("digits_cnn.qdq.onnx")),
                                            str(model_in_tmp.with_name("digits_cnn.report.html")),
                                            str(elsewhere / "digits_cnn.qdq.onnx")]
    assert settings.last_folder("export") == str(elsewhere)
    assert settings.last_folder("project", "beside") == "beside"  # the other purposes keep theirs


def test_open_dialogs_start_in_the_last_model_and_project_folders(window, file_dialogs, tmp_path):
    win = window
    models, projects = _folders(tmp_path, "models", "projects")
    settings.remember_folder("model", models)
    settings.remember_folder("project", projects / "job.wbproj")
    win.open_dialog()
    win.open_project_dialog()
    assert file_dialogs == [("open", str(models)), ("open", str(projects))]


def test_data_dialogs_start_in_the_last_data_folder(window, file_dialogs, tmp_path):
    win = window
    (data,) = _folders(tmp_path, "data")
    file_dialogs.answer = str(data / "calib.npz")
    win.calibration._on_browse()
    assert settings.last_folder("data") == str(data)
    file_dialogs.answer = ""
    win.evaluate_panel.settings._on_browse()
    assert [d for _k, d in file_dialogs] == [str(Path.home()), str(data)]


def test_a_folder_gone_since_is_not_where_dialogs_start(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    settings.remember_folder("export", gone / "x.onnx")
    gone.rmdir()
    assert settings.last_folder("export", tmp_path) == str(tmp_path)
    with pytest.raises(ValueError, match="unknown file dialog purpose 'exports'"):
        settings.last_folder("exports")


def test_export_starts_in_the_saved_projects_folder_before_any_export(window, open_file, file_dialogs,
                                                                      model_in_tmp, tmp_path):
    """A project saved away from the model: its exports start beside it (they started in the model's folder,
    the corpus), until an export chooses a folder of its own."""
    win = window
    open_file(win, model_in_tmp)
    (projects,) = _folders(tmp_path, "projects")
    win.save_project_to(projects / "digits.wbproj")
    win.export_dialog()
    win.save_project_as()
    assert file_dialogs == [("save", str(projects / "digits_cnn.qdq.onnx")),
                            ("save", str(projects / "digits.wbproj"))]
