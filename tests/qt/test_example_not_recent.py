"""A launch without a model opens the bundled example; it went to the top of File > Open Recent on every launch,
and the Open dialog then started in the package's resources/example folder. Export started in a read-only
corpus folder when the app ran as root (who may write there anyway)."""

from __future__ import annotations

import os
from pathlib import Path

from test_dialog_folders import file_dialogs, model_in_tmp  # noqa: F401 - fixtures

from workbench.qt import settings
from workbench.qt.welcome import example_model


def test_the_example_at_launch_leaves_recent_files_and_the_open_folder(qtbot, window, open_file, file_dialogs,  # noqa: F811
                                                                       model_in_tmp):  # noqa: F811
    settings.add_recent_file(model_in_tmp)
    open_file(window, example_model())  # what `workbench` without a model does
    assert settings.recent_files() == [str(model_in_tmp)]
    window.fill_recent()
    assert [a.text() for a in window.recent_menu.actions() if a.text() and not a.isSeparator()][0] == f"&1 {model_in_tmp}"
    assert str(example_model()) not in [a.iconText() for a in window.recent_menu.actions()]
    window.open_dialog()
    assert file_dialogs == [("open", str(Path.home()))]


def test_export_does_not_start_in_a_folder_without_write_permission(window, open_file, file_dialogs,  # noqa: F811
                                                                    model_in_tmp, monkeypatch):  # noqa: F811
    open_file(window, model_in_tmp)
    folder = model_in_tmp.parent
    folder.chmod(0o555)  # a shared corpus (root writes there all the same)
    try:
        window.export_dialog()
    finally:
        folder.chmod(0o755)
    assert file_dialogs == [("save", os.path.join(os.path.expanduser("~"), "digits_cnn.qdq.onnx"))]
