"""The no-model screen is a welcome page: Open Model..., Open Project..., Open Example (the bundled
digits CNN) and the recent files, each clickable, and one line saying a model can be dropped on the
window. A new user saw a small text box in the graph's corner with no recent list and no example."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QLabel

from workbench.qt import settings
from workbench.qt.welcome import DROP_HINT, NO_RECENT, RECENT_NOT_FOUND, example_model


def test_settings_of_this_test_are_not_the_users(tmp_path_factory):
    settings.add_recent_file(EXAMPLE_MODEL)
    written = Path(QSettings(settings.ORGANIZATION, settings.APPLICATION).fileName()).resolve()
    assert written.is_relative_to(tmp_path_factory.getbasetemp().resolve())


def test_welcome_page_lists_the_recent_files_and_opens_one(qtbot, window, tmp_path):
    model = tmp_path / "mine" / "digits.onnx"
    model.parent.mkdir()
    shutil.copy(EXAMPLE_MODEL, model)
    project = tmp_path / "job.wbproj"
    project.write_text("{}")
    gone = tmp_path / "gone.onnx"
    for path in (gone, project, model):  # the last added is listed first
        path.touch()
        settings.add_recent_file(path)
    gone.unlink()
    win = window
    win.welcome.hide()  # shown again: the list is read again from the settings
    win.welcome.show()
    assert win.centre.currentWidget() is win.welcome and win.welcome.isVisible()
    assert win.welcome.recent_paths() == [str(model.resolve()), str(project.resolve()), str(gone.resolve())]
    assert [b.label.text() for b in win.welcome.recent_buttons] == [  # the gone one said so (it was not listed)
        f"<b>{model.name}</b>", f"<b>{project.name}</b>", f"{gone.name}{RECENT_NOT_FOUND}"]
    with qtbot.waitSignal(win.modelOpened, timeout=120_000) as opened:
        qtbot.mouseClick(win.welcome.recent_buttons[0], Qt.MouseButton.LeftButton)
    assert Path(opened.args[0]) == model.resolve()
    assert win.centre.currentWidget() is win.tabs and not win.welcome.isVisible()


def test_welcome_page_opens_the_example(qtbot, window):
    win = window
    buttons = win.welcome.buttons
    assert [b.action for b in buttons.values()] == [win.act_open, win.act_open_project, win.act_open_example]
    assert all(b.isEnabled() for b in buttons.values())
    assert buttons["open"].keys.text() == win.act_open.shortcut().toString()  # Ctrl+O, as the menu says
    assert DROP_HINT in win.welcome.drop_hint.text() and "Drag" in DROP_HINT
    assert example_model().resolve() == EXAMPLE_MODEL and EXAMPLE_MODEL.is_file()
    with qtbot.waitSignal(win.modelOpened, timeout=120_000) as opened:
        qtbot.mouseClick(buttons["open_example"], Qt.MouseButton.LeftButton)
    assert Path(opened.args[0]).resolve() == EXAMPLE_MODEL
    assert win.centre.currentWidget() is win.tabs
    assert Path(win.calibration.data_spec()["path"]).name == "digits_cnn_calib.npz"  # its data chosen too


def test_welcome_page_without_recent_files_says_so(window):
    assert window.welcome.recent_paths() == []
    assert any(label.text() == NO_RECENT for label in window.welcome.findChildren(QLabel))
