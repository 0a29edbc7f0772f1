"""A failed calibration's line in the Calibration panel ("Calibrate failed: ... axis -8 ...") stayed
after the undo that fixed the recipe; it now says the recipe changed since."""

from __future__ import annotations

from workbench.qt import commands

CONV = "/f/f.0/Conv"


def test_failed_calibration_line_is_marked_stale_when_the_recipe_changes(qtbot, window, open_file, corpus, dialogs):
    win = window
    folder = corpus / "digits_cnn"
    open_file(win, folder / "model_opset17.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(folder / "calib.npz")}, 8)
    win._on_spec_changed()
    commands.push_edit(win.doc, commands.set_role_field(win.doc.recipe, [CONV], "weight", "axis", -8), "axis -8")
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_calibrate.trigger()
    failed = win.calibration.status.text()
    assert failed.startswith("Calibrate failed:") and "axis -8" in failed
    assert "axis -8" in dialogs.texts()
    dialogs.clear()
    assert win.doc.undo_stack.text(win.doc.undo_stack.index() - 1) == "axis -8"
    win.act_undo.trigger()  # the edit that broke it, undone
    assert not win.doc.recipe.overrides
    text = win.calibration.status.text()
    assert text.startswith("Calibrate failed:") and text.endswith("(The recipe changed since; F5 calibrates it.)")
    win.act_redo.trigger()  # marked once, not once per change
    assert win.calibration.status.text().count("The recipe changed since") == 1
