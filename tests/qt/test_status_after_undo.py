"""The status line follows Edit > Undo / Redo: after F8 (keep the sweep's suggested units float) and
Ctrl+Z it said "Kept 2 units in float ... (Ctrl+Z undoes)." while every unit was quantized again."""

from __future__ import annotations

import shutil
from pathlib import Path

import workbench

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example"


def test_undo_and_redo_of_the_suggestion_say_so(qtbot, window, open_file, tmp_path):
    win = window
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(win, tmp_path / "digits_cnn.onnx")
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.act_sensitivity.trigger()
    suggestion = list(win.doc.suggestion)
    assert suggestion, win.status_label.text()
    win.act_apply_suggestion.trigger()  # F8
    assert win.status_label.text().startswith(f"Kept {len(suggestion)} unit")
    edit = win.doc.undo_stack.undoText()
    assert edit.startswith("Keep ") and edit.endswith(" in float")

    win.act_undo.trigger()  # Ctrl+Z
    assert not any(win.doc.plan.units[n].excluded for n in suggestion)
    status = win.status_label.text()
    assert "Kept" not in status and status == f"Undone: {edit} (Ctrl+Y redoes it)."
    assert win.status_label.toolTip() == status

    win.act_redo.trigger()  # Ctrl+Y
    assert all(win.doc.plan.units[n].excluded for n in suggestion)
    assert win.status_label.text() == f"Redone: {edit} (Ctrl+Z undoes it)."
