"""Save dialogs start where the user last saved, not in the model's folder, which may be read-only (a
shared corpus): Save Project As after an Export started beside the model, where the save fails
(pytest-qt, offscreen)."""

from __future__ import annotations

import os

from test_dialog_folders import _folders, file_dialogs, model_in_tmp  # noqa: F401 - fixtures

from workbench.qt import settings


def test_save_project_as_starts_where_the_last_export_went(window, open_file, file_dialogs,  # noqa: F811
                                                           model_in_tmp, tmp_path, monkeypatch):  # noqa: F811
    win = window
    open_file(win, model_in_tmp)
    (out,) = _folders(tmp_path, "out")
    monkeypatch.setattr(win, "export_to", lambda path, fmt=None: None)  # the dialogs' folders alone are checked
    file_dialogs.answer = str(out / "digits_cnn.qdq.onnx")
    win.export_dialog()  # the first save: beside the model (writable here)
    file_dialogs.answer = ""
    win.save_project_as()  # no project folder yet: where the export went, not the model's folder
    assert file_dialogs == [("save", str(model_in_tmp.with_name("digits_cnn.qdq.onnx"))),
                            ("save", str(out / "digits_cnn.wbproj"))]
    assert settings.last_folder("project", "none") == "none"  # its own folder is still the one it chooses


def test_a_read_only_model_folder_is_not_where_a_save_starts(window, open_file, file_dialogs,  # noqa: F811
                                                             model_in_tmp, monkeypatch):  # noqa: F811
    win = window
    open_file(win, model_in_tmp)
    corpus = str(model_in_tmp.parent)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if str(p) == corpus else real(p, mode, *a, **k))
    win.save_project_as()
    win.export_dialog()
    home = settings.user_folder()  # the documents folder, else home
    assert file_dialogs == [("save", os.path.join(home, "digits_cnn.wbproj")),
                            ("save", os.path.join(home, "digits_cnn.qdq.onnx"))]
