"""The status line follows Edit > Undo / Redo: after F8 (keep the sweep's suggested units float) and
Ctrl+Z it said "Kept 2 units in float ... (Ctrl+Z undoes)." while every unit was quantized again."""

from __future__ import annotations

from example_copy import open_example_copy


def test_undo_and_redo_of_the_suggestion_say_so(qtbot, window, open_file, tmp_path):
    win = window
    open_example_copy(win, open_file, tmp_path, samples=None, analysis_samples=None)
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
