"""Run > Choose Recipe (Ctrl+F5): the CLI's default recipe choice in the app, applied as one undoable edit."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from workbench.core import api


def _run_menu(window):
    return next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")


def test_choose_recipe_on_digits_transformer_applies_compute_only_mse_and_undo_restores(qtbot, window, open_file,
                                                                                        corpus):
    folder = corpus / "digits_transformer"
    open_file(window, folder / "model_opset17.onnx")
    assert window.act_choose.shortcut() == QKeySequence("Ctrl+F5") and window.act_choose in _run_menu(window).actions()
    before = window.doc.recipe.model_copy(deep=True)
    assert window.doc.data == {"kind": "npz", "path": str(folder / "calib.npz")}  # picked beside the model
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_choose.trigger()
    # the same choice headless, on the same model, recipe and rows
    want = api.choose_recipe(api.open_model(folder / "model_opset17.onnx"), before, str(folder / "calib.npz"))
    assert want.chosen == "compute+mse" and want.scores["compute+mse"] > want.scores["preset"] + 1.0
    assert window.doc.recipe == want.recipe
    assert window.doc.recipe.op_types == ["MatMul", "Gemm"]  # the compute op types the model has
    text = window.status_label.text()
    assert text.startswith("Recipe choice: compute+mse (output SQNR on 16 held-out rows, dB: preset ")
    assert "Ctrl+Z restores" in text and window.calibration.status.text() == "Idle."
    # the choice's pass over every row becomes the calibration cache: the export calibrates nothing again
    cache = window.doc.calibration
    assert cache is not None and cache["samples_seen"] == want.calibration.samples_seen
    assert set(api.plan(api.open_model(folder / "model_opset17.onnx"), want.recipe).activations) <= set(cache["observers"])
    window.doc.undo_stack.undo()
    assert window.doc.recipe == before


def test_a_choice_that_keeps_the_preset_but_promotes_units_is_applied(qtbot, window, open_file, tmp_path):
    """The preset stays, and the promotion step keeps the outlier's unit float (cpu-u8s8): the window
    applies that recipe (it had taken "preset" as "nothing changes")."""
    from test_mixed_precision import _outlier_chain
    path, data, _ = _outlier_chain(tmp_path)
    open_file(window, path)
    assert window.doc.data == {"kind": "npz", "path": str(data)}
    before = window.doc.recipe.model_copy(deep=True)
    with qtbot.waitSignal(window.runs.finished, timeout=240_000):
        window.act_choose.trigger()
    promoted = list(window.doc.recipe.overrides)
    assert promoted[:1] == ["mm0"] and set(promoted) <= {"mm0", "mm1"}  # mm1 too with 7-bit weights (no VNNI)
    assert all(o.exclude for o in window.doc.recipe.overrides.values())
    text = window.status_label.text()
    assert text.startswith(f"Recipe choice: preset + {len(promoted)} unit{'s' * (len(promoted) > 1)} kept float")
    assert "Ctrl+Z restores" in text
    window.doc.undo_stack.undo()
    assert window.doc.recipe == before
