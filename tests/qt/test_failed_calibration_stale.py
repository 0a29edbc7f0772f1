"""A failed calibration's line in the Calibration panel ("Calibrate failed: ... axis -8 ...") stayed
after the undo that fixed the recipe; the undo now replaces it (the failure was of the undone edit), and
another edit marks it as of an earlier recipe."""

from __future__ import annotations

from workbench.qt import commands

CONV = "/f/f.0/Conv"


def _failed_calibration(qtbot, win, open_file, corpus):
    """digits_cnn opened, its first Conv's weight axis set to -8 (one edit), F5: the calibration fails."""
    folder = corpus / "digits_cnn"
    open_file(win, folder / "model_opset17.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(folder / "calib.npz")}, 8)
    win._on_spec_changed()
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, [CONV], "weight", "axis", -8), "axis -8")
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_calibrate.trigger()
    return win


def test_failed_calibration_line_is_marked_stale_when_the_recipe_changes(qtbot, window, open_file, corpus, dialogs):
    win = _failed_calibration(qtbot, window, open_file, corpus)
    failed = win.calibration.status.text()
    assert failed.startswith("Calibrate failed:") and "axis -8" in failed
    assert "axis -8" in dialogs.texts()
    dialogs.clear()
    assert win.doc.undo_stack.text(win.doc.undo_stack.index() - 1) == "axis -8"
    win.act_undo.trigger()  # the edit that broke it, undone
    assert not win.doc.recipe.overrides
    # the failure was of the undone edit: the panel says so instead of "Calibrate failed: ..."
    undone = "The last calibration failed with an edit now undone (axis -8); F5 calibrates again."
    assert win.calibration.status.text() == undone
    assert win.status_label.text() == "Undone: axis -8 (Ctrl+Y redoes it)."
    win.act_redo.trigger()  # the failing edit is back: so is its failure
    assert win.calibration.status.text() == failed
    win.act_undo.trigger()
    assert win.calibration.status.text() == undone


def test_undoing_an_edit_made_after_the_failure_does_not_call_it_the_failing_one(qtbot, window, open_file, corpus,
                                                                                  dialogs):
    """Calibrate failed, then edit B, then Undo of B: the recipe is the one that failed, not "an edit now
    undone (B)"."""
    win = _failed_calibration(qtbot, window, open_file, corpus)
    failed = win.calibration.status.text()
    dialogs.clear()
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, ["/f/f.3/Conv"], "weight", "axis", 0), "B")
    win.act_undo.trigger()
    assert win.calibration.status.text() == failed


def test_failed_calibration_line_is_marked_stale_after_another_edit(qtbot, window, open_file, corpus, dialogs):
    win = _failed_calibration(qtbot, window, open_file, corpus)
    dialogs.clear()
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, [CONV], "weight", "axis", 0), "axis 0")
    text = win.calibration.status.text()
    assert text.startswith("Calibrate failed:") and text.endswith("(The recipe changed since; F5 calibrates it.)")
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, [CONV], "weight", "axis", 1), "axis 1")
    assert win.calibration.status.text().count("The recipe changed since") == 1  # marked once, not per change
