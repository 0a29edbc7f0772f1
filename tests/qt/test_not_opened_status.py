"""A model that could not be opened: the status line says why and what to do in one line, as the dialog does.

It read only "Could not open nosuch.onnx." (the dialog alone said to check the path), and for a recent file that
was gone, the dialog's first line with the whole path and nothing to do ("/.../gone.onnx no longer exists (moved,
renamed or deleted); it was removed from the recent files.")."""

from __future__ import annotations

import shutil

from workbench.qt import settings
from workbench.qt.welcome import example_model


def test_a_missing_model_says_why_and_what_to_do(qtbot, window, dialogs, tmp_path):
    window.open_path(tmp_path / "nosuch.onnx")
    qtbot.waitUntil(lambda: bool(dialogs), timeout=60_000)
    assert "no such model file" in dialogs.texts()
    dialogs.clear()
    assert window.status_label.text() == ("Could not open nosuch.onnx: no such file; check the path or pick it with "
                                          "File > Open (Ctrl+O).")


def test_a_file_that_is_no_model_says_the_readers_words(qtbot, window, dialogs, tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"not a protobuf at all")
    window.open_path(bad)
    qtbot.waitUntil(lambda: bool(dialogs), timeout=60_000)
    assert "not an ONNX model" in dialogs.texts()
    dialogs.clear()
    assert window.status_label.text() == (
        "Could not open garbage.onnx: this is a text file (its first line: 'not a protobuf at all'), not an ONNX "
        "model; give the binary .onnx model file itself (exported with torch.onnx.export / onnx.save).")


def test_a_gone_recent_file_says_so_and_what_to_do(qtbot, window, open_file, dialogs, tmp_path):
    gone, kept = tmp_path / "gone.onnx", tmp_path / "kept.onnx"
    for path in (gone, kept):
        shutil.copy(example_model(), path)
    open_file(window, kept)
    settings.add_recent_file(gone)
    gone.unlink()
    window.open_recent(str(gone))
    assert dialogs.texts() == (f"Workbench: {gone} no longer exists (moved, renamed or deleted); it was removed from "
                               "the recent files.\n\nOpen it where it is now with File > Open (Ctrl+O).")
    dialogs.clear()
    assert window.status_label.text() == (
        "Could not open gone.onnx: it no longer exists (moved, renamed or deleted) and was removed from the recent "
        "files; open it where it is now with File > Open (Ctrl+O). kept.onnx is still open.")
