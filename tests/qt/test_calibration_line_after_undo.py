"""The Calibration panel's line of a finished calibration follows Edit > Undo / Redo.

The bundled digits_cnn, calibrated with "Choose the recipe first": the panel said "Recipe choice: preset
(...). Ctrl+Z restores the recipe the choice started from ..." and kept saying so after Ctrl+Z had undone
the choice. Now it names what was undone and that the figures are of the recipe calibrated then; Ctrl+Y
brings the calibration's line back.
"""

from __future__ import annotations

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from test_app_stale_results import calibrated

from workbench.qt.done_line import UNDONE_DONE, done_line_after_step


def test_done_line_by_stack_position():
    texts = ["Change calibration samples", "Choose recipe: mse", "Keep 2 units float (latency check)"]
    assert done_line_after_step(texts, 3, 3, "Done.") == "Done."
    assert done_line_after_step(texts + ["Exclude a"], 4, 3, "Done.") is None  # a later edit: left as is
    line = done_line_after_step(texts, 1, 3, "Done.")
    assert line.startswith(f'{UNDONE_DONE} "Choose recipe: mse"; "Keep 2 units float (latency check)". ')
    assert "not of the current one" in line


def test_undo_of_the_recipe_choice_leaves_the_choice_text(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # no latency edit: the choice is the last edit
    win = window
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 16)
    calibrated(qtbot, win, open_file, EXAMPLE / "digits_cnn.onnx", samples=16, choose=True)
    stack = win.doc.undo_stack
    choice = stack.undoText()
    assert choice.startswith("Choose recipe: "), [stack.text(i) for i in range(stack.count())]
    done = win.calibration.status.text()
    assert "Recipe choice:" in done and "Ctrl+Z restores" in done

    win.act_undo.trigger()
    shown = win.calibration.status.text()
    assert shown.startswith(f'{UNDONE_DONE} "{choice}".'), shown
    assert "Recipe choice:" not in shown and "Ctrl+Z" not in shown

    win.act_redo.trigger()
    assert win.calibration.status.text() == done
