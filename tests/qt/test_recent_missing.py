"""File > Open Recent keeps its files across a restart, and says so when one no longer exists.

A recent file that was moved or deleted vanished from the menu without a word (recent_files() dropped it when
listing), so the user looked for it in vain; and one deleted while the menu was open asked to save the unsaved
edits before failing with "no such model file". It is now listed as "PATH  (not found)"; choosing it asks
nothing, removes it from the list and says where to open it from instead. The welcome page's Recent list dropped
such a file without a word too: it lists it the same way, and choosing it there does the same."""

from __future__ import annotations

import shutil

from PySide6.QtCore import Qt

from workbench.qt import settings
from workbench.qt.app_window import CLEAR_RECENT, MainWindow
from workbench.qt.welcome import RECENT_NOT_FOUND, example_model

EXAMPLE = example_model()


def _entries(win) -> list:
    win.fill_recent()
    return [a for a in win.recent_menu.actions() if not a.isSeparator()]


def test_recent_files_survive_a_restart(qtbot, window, open_file, tmp_path):
    first, second = tmp_path / "first.onnx", tmp_path / "second.onnx"
    for path in (first, second):
        shutil.copy(EXAMPLE, path)
        open_file(window, path)
    window.close()
    again = MainWindow()  # a new session reads the same QSettings
    qtbot.addWidget(again)
    assert [a.text() for a in _entries(again)] == [f"&1 {second}", f"&2 {first}", CLEAR_RECENT]
    again.close()


def test_a_missing_recent_file_is_listed_then_removed_with_a_message(qtbot, window, open_file, tmp_path, dialogs,
                                                                      save_prompts):
    gone, kept = tmp_path / "gone.onnx", tmp_path / "kept.onnx"
    for path in (gone, kept):
        shutil.copy(EXAMPLE, path)
        open_file(window, path)
    window.calibration.samples.setValue(window.calibration.samples.value() + 1)  # an unsaved edit
    window.sync_data_spec()
    assert window.doc.modified
    gone.unlink()
    entries = _entries(window)
    assert [a.text() for a in entries] == [f"&1 {kept}", f"&2 {gone}{RECENT_NOT_FOUND}", CLEAR_RECENT]
    assert entries[1].statusTip() == "This file no longer exists: choose it to remove it from the list"
    entries[1].trigger()
    assert save_prompts == []  # nothing to open: no Save / Discard question
    assert dialogs.texts() == (f"Workbench: {gone} no longer exists (moved, renamed or deleted); it was removed from "
                               "the recent files.\n\nOpen it where it is now with File > Open (Ctrl+O).")
    dialogs.clear()
    assert window._open_job is None and window.doc.model_path == kept
    assert settings.recent_files(existing=False) == [str(kept)]
    assert [a.text() for a in _entries(window)] == [f"&1 {kept}", CLEAR_RECENT]


def test_the_welcome_page_lists_a_missing_recent_file_and_removes_it_when_chosen(qtbot, window, tmp_path, dialogs,
                                                                                save_prompts):
    gone, kept = tmp_path / "gone.onnx", tmp_path / "kept.onnx"
    for path in (gone, kept):
        shutil.copy(EXAMPLE, path)
        settings.add_recent_file(path)
    gone.unlink()
    window.welcome.refresh()
    page = window.welcome
    assert page.recent_paths() == [str(kept), str(gone)]
    # its name said not found, then its folder, as a found file's name and folder (the menu lists "PATH  (not found)")
    assert page.recent_buttons[1].label.text() == f"{gone.name}{RECENT_NOT_FOUND}"
    assert page.recent_buttons[1].folder.text() == str(gone.parent)
    assert page.recent_buttons[1].toolTip() == f"{gone}\nThis file no longer exists: choose it to remove it from the list"
    qtbot.mouseClick(page.recent_buttons[1], Qt.MouseButton.LeftButton)
    assert save_prompts == []
    assert dialogs.texts() == (f"Workbench: {gone} no longer exists (moved, renamed or deleted); it was removed from "
                               "the recent files.\n\nOpen it where it is now with File > Open (Ctrl+O).")
    dialogs.clear()
    assert window._open_job is None and window.doc.model_path is None
    assert settings.recent_files(existing=False) == [str(kept)]
    assert page.recent_paths() == [str(kept)]  # the page lists it no more, nor does the menu
    assert [a.text() for a in _entries(window)] == [f"&1 {kept}", CLEAR_RECENT]


def test_adding_a_recent_file_keeps_the_missing_ones(tmp_path):
    """add_recent_file built the list from recent_files(), which leaves out files that no longer exist: opening any
    file removed every "(not found)" entry without a word. Only the gone file chosen is removed (open_recent)."""
    gone, kept, new = (tmp_path / f"{name}.onnx" for name in ("gone", "kept", "new"))
    for path in (gone, kept, new):
        path.write_bytes(b"")
    settings.add_recent_file(gone)
    settings.add_recent_file(kept)
    gone.unlink()
    assert settings.add_recent_file(new) == [str(new), str(kept), str(gone)]
    assert settings.recent_files(existing=False) == [str(new), str(kept), str(gone)]
    assert settings.recent_files() == [str(new), str(kept)]
    assert settings.forget_recent_file(str(gone)) == [str(new), str(kept)]


def test_opening_a_file_keeps_a_missing_recent_file_listed(qtbot, window, open_file, tmp_path):
    gone, kept = tmp_path / "gone.onnx", tmp_path / "kept.onnx"
    shutil.copy(EXAMPLE, gone)
    open_file(window, gone)
    gone.unlink()
    shutil.copy(EXAMPLE, kept)
    open_file(window, kept)
    assert [a.text() for a in _entries(window)] == [f"&1 {kept}", f"&2 {gone}{RECENT_NOT_FOUND}", CLEAR_RECENT]
    window.welcome.refresh()  # the page lists the same files
    assert window.welcome.recent_paths() == [str(kept), str(gone)]


def test_the_welcome_page_shows_not_found_in_a_narrow_window(qtbot, window, tmp_path):
    """The page listed a gone file as its whole path then "  (not found)": in a 1000 px window the Recent column
    cut it off at "/tmp/.../files/old.w", the words that say it is gone not shown (and a found file's name was cut
    off too: "digits_cnn.onr"). Each name, with "(not found)", keeps its width now; the folder after it is cut off
    first."""
    folder = tmp_path / "a folder with a long name to fill the column of the welcome page"
    folder.mkdir()
    gone, kept = folder / "old.wbproj", folder / "digits_cnn.onnx"
    for path in (gone, kept):
        path.touch()
        settings.add_recent_file(path)
    gone.unlink()
    window.resize(1000, 700)
    window.welcome.refresh()
    qtbot.waitUntil(lambda: all(b.isVisible() for b in window.welcome.recent_buttons))
    qtbot.wait(50)  # laid out
    buttons = window.welcome.recent_buttons
    assert [b.label.text() for b in buttons] == [f"<b>{kept.name}</b>", f"old.wbproj{RECENT_NOT_FOUND}"]
    for button in buttons:
        label = button.label
        assert label.width() >= label.sizeHint().width()
        assert label.geometry().right() < button.width()
        assert button.folder.width() < button.folder.sizeHint().width()  # the folder is what is cut off
