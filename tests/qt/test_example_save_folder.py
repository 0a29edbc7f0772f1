"""Save dialogs of the bundled example (opened when no model is given) never start inside the installed
package: File > Export proposed workbench/resources/example/digits_cnn.qdq.onnx (writable when installed
as root, lost with the next install). They start in the user's documents folder (platformdirs), or home
when there is none, or in the folder last saved to."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from test_dialog_folders import EXAMPLE, _folders, file_dialogs  # noqa: F401 - fixtures

from workbench.qt import settings


def test_export_and_save_of_the_example_start_in_documents(window, open_file, file_dialogs,  # noqa: F811
                                                            tmp_path, monkeypatch):
    (documents,) = _folders(tmp_path, "Documents")
    monkeypatch.setattr(platformdirs, "user_documents_dir", lambda: str(documents))
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")  # the bundled example itself, in the package
    monkeypatch.setattr(win, "export_to", lambda path, fmt=None: None)  # the dialogs' folders alone are checked
    win.export_dialog()
    win.save_project_as()
    assert file_dialogs == [("save", str(documents / "digits_cnn.qdq.onnx")),
                            ("save", str(documents / "digits_cnn.wbproj"))]


def test_without_a_documents_folder_home_then_the_last_folder_saved_to(window, open_file, file_dialogs,  # noqa: F811
                                                                       tmp_path, monkeypatch):
    monkeypatch.setattr(platformdirs, "user_documents_dir", lambda: str(tmp_path / "no-such-folder"))
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    monkeypatch.setattr(win, "export_to", lambda path, fmt=None: None)
    win.export_dialog()
    (out,) = _folders(tmp_path, "out")
    settings.remember_folder("export", out / "digits_cnn.qdq.onnx")  # a save elsewhere: the next starts there
    win.export_dialog()
    assert file_dialogs == [("save", str(Path.home() / "digits_cnn.qdq.onnx")),
                            ("save", str(out / "digits_cnn.qdq.onnx"))]
    package = Path(settings.workbench.__file__).resolve().parent
    assert settings.in_package(EXAMPLE) and not settings.in_package(out) and settings.in_package(package)
