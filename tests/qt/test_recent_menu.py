"""File > Open Recent shows a path holding '&' as it is, numbers its first nine entries with their key, and can be
cleared.

Found by a user pass: a model in a folder named "R&D" was listed as "RD" with the D underlined (Qt reads a single
'&' as the mnemonic marker), and settings.clear_recent_files had no menu entry: the list could not be emptied. The
entries had no number key: Alt+F, R, 2 (the second file) did nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import Qt

from workbench.qt import settings
from workbench.qt.app_window import CLEAR_RECENT


def _entries(window) -> list:
    window.fill_recent()
    return [a for a in window.recent_menu.actions() if not a.isSeparator()]


def test_a_path_with_an_ampersand_is_shown_whole_and_opens(qtbot, window, open_file, tmp_path):
    folder = tmp_path / "R&D"
    folder.mkdir()
    model = folder / "digits & co.onnx"
    shutil.copy(EXAMPLE_MODEL, model)
    open_file(window, model)
    first = _entries(window)[0]
    assert first.text() == "&1 " + str(model).replace("&", "&&")  # '&&' draws one '&': "1 .../R&D/digits & co.onnx"
    assert first.iconText() == str(model)
    window.doc.mark_saved()
    open_file(window, EXAMPLE_MODEL)  # another model shown, then the recent entry opens the R&D one again
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):
        first.trigger()
    assert Path(window.doc.model_path) == model


def test_clear_recent_files_empties_the_list(qtbot, window, open_file, tmp_path):
    model = tmp_path / EXAMPLE_MODEL.name
    shutil.copy(EXAMPLE_MODEL, model)
    open_file(window, model)
    entries = _entries(window)
    assert [a.text() for a in entries] == [f"&1 {model}", CLEAR_RECENT]
    entries[-1].trigger()
    entries = _entries(window)
    assert [(a.text(), a.isEnabled()) for a in entries] == [("(none)", False), (CLEAR_RECENT, False)]


def test_the_first_nine_entries_are_numbered_with_their_key(qtbot, window, tmp_path):
    paths = [tmp_path / f"m{i}.onnx" for i in range(11)]
    for path in reversed(paths):  # the last added is listed first: m0 .. m9 (the list keeps 10)
        path.touch()
        settings.add_recent_file(path)
    entries = _entries(window)
    assert [a.text() for a in entries] == [f"&{i + 1} {p}" for i, p in enumerate(paths[:9])] + [
        f"10 {paths[9]}", CLEAR_RECENT]
    assert [a.iconText() for a in entries[:10]] == [str(p) for p in paths[:10]]  # the path as it reads, no number


def test_alt_f_r_2_opens_the_second_recent_file(qtbot, window, open_file, tmp_path):
    first, second = tmp_path / "first.onnx", tmp_path / "second.onnx"
    for path in (first, second):
        shutil.copy(EXAMPLE_MODEL, path)
        open_file(window, path)  # second is listed first, first second
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.AltModifier)
    file_menu = window.recent_menu.parentWidget()
    qtbot.waitUntil(file_menu.isVisible)
    qtbot.keyClick(file_menu, Qt.Key.Key_R)
    qtbot.waitUntil(window.recent_menu.isVisible)
    with qtbot.waitSignal(window.modelOpened, timeout=60_000) as opened:
        qtbot.keyClick(window.recent_menu, Qt.Key.Key_2)
    assert Path(opened.args[0]) == first
    assert not window.recent_menu.isVisible() and not file_menu.isVisible()
