"""Autosaves kept aside (an unreadable one, or one restored onto a changed model) no longer pile up in the
autosave folder: at most KEPT_PER_MODEL per model, none older than KEPT_DAYS days, never the one just kept;
the window's once-per-session note says where they are.

Found by a bug hunt: every kept-aside autosave stayed in the folder for ever, and nothing said where."""

from __future__ import annotations

import time
from pathlib import Path

from bundled_example import EXAMPLE_MODEL

from workbench.qt import autosave

DAY = 86400


def _kept(folder: Path, key: str, days_ago: float, n: int = 0) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() - days_ago * DAY))
    path = folder / f"{key}.kept-{stamp}{'-' + str(n) if n else ''}.wbproj"
    path.write_text("{}")
    return path


def test_prune_keeps_the_newest_per_model_and_drops_the_old(autosave_folder):
    assert autosave.KEPT_PER_MODEL == 5 and autosave.KEPT_DAYS == 30
    a = [_kept(autosave_folder, "aaaa", days) for days in (1, 2, 3, 4, 5, 6, 7)]  # newest first
    a_old = _kept(autosave_folder, "aaaa", 40)
    b = [_kept(autosave_folder, "bbbb", 2), _kept(autosave_folder, "bbbb", 31)]
    spare = _kept(autosave_folder, "cccc", 90)  # the one just kept: stays whatever its age
    own = autosave_folder / "aaaa.wbproj"  # a live autosave and its note: never touched
    own.write_text("{}")
    (autosave_folder / "aaaa.json").write_text("{}")
    gone = autosave.prune_kept(spare=spare)
    assert sorted(gone) == sorted([a[5], a[6], a_old, b[1]])
    assert sorted(p.name for p in autosave_folder.iterdir()) == sorted(
        [p.name for p in a[:5]] + [b[0].name, spare.name, "aaaa.wbproj", "aaaa.json"])


def test_keep_aside_prunes_the_models_older_kept_files(autosave_folder):
    files = autosave.AutosaveFiles.for_model(EXAMPLE_MODEL)
    key = files.project.stem
    earlier = [_kept(autosave_folder, key, days) for days in (1, 2, 3, 4, 5)]
    files.project.write_text('{"damaged": ')
    files.note.write_text("{}")
    target = autosave.keep_aside(files, move=True)
    assert target.read_text() == '{"damaged": ' and not files.exists() and not files.note.exists()
    assert sorted(autosave.kept_files()) == sorted([target, *earlier[:4]])  # the oldest of the six went


def test_the_once_per_session_note_says_where_kept_autosaves_are(qtbot, window, open_file, autosave_folder):
    _kept(autosave_folder, "aaaa", 1)
    _kept(autosave_folder, "bbbb", 2)
    old = _kept(autosave_folder, "bbbb", 45)
    open_file(window, EXAMPLE_MODEL)
    status = window.status_label.text()
    assert f"2 earlier autosaves that could not be restored as written are kept in {autosave_folder}" in status
    assert not old.exists()
