"""File > Open Recent shows a path holding '&' as it is, and can be cleared.

Found by a user pass: a model in a folder named "R&D" was listed as "RD" with the D underlined (Qt reads a single
'&' as the mnemonic marker), and settings.clear_recent_files had no menu entry: the list could not be emptied."""

from __future__ import annotations

import shutil
from pathlib import Path

import workbench
from workbench.qt.app_window import CLEAR_RECENT

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example" / "digits_cnn.onnx"


def _entries(window) -> list:
    window.fill_recent()
    return [a for a in window.recent_menu.actions() if not a.isSeparator()]


def test_a_path_with_an_ampersand_is_shown_whole_and_opens(qtbot, window, open_file, tmp_path):
    folder = tmp_path / "R&D"
    folder.mkdir()
    model = folder / "digits & co.onnx"
    shutil.copy(EXAMPLE, model)
    open_file(window, model)
    first = _entries(window)[0]
    assert first.text() == str(model).replace("&", "&&")  # '&&' draws one '&': "R&D/digits & co.onnx"
    assert first.iconText() == str(model)
    window.doc.mark_saved()
    open_file(window, EXAMPLE)  # another model shown, then the recent entry opens the R&D one again
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):
        first.trigger()
    assert Path(window.doc.model_path) == model


def test_clear_recent_files_empties_the_list(qtbot, window, open_file, tmp_path):
    model = tmp_path / EXAMPLE.name
    shutil.copy(EXAMPLE, model)
    open_file(window, model)
    entries = _entries(window)
    assert [a.text() for a in entries] == [str(model), CLEAR_RECENT]
    entries[-1].trigger()
    entries = _entries(window)
    assert [(a.text(), a.isEnabled()) for a in entries] == [("(none)", False), (CLEAR_RECENT, False)]
