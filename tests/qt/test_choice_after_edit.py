"""An edit after the recipe choice: F5 and Run > Choose Recipe say the choice already ran and the recipe was
edited after it, counting the user's edits only, and how to choose again.

On digits_transformer the choice writes compute+mse: one rule and the op types MatMul, Gemm. One node edit
after it made F5 say "the recipe has 3 edits; ... undo the edits" and Ctrl+F5 say "the recipe sets rules,
overrides or op types (it is used as written)", both counting the choice's own rules as the user's.
"""

from __future__ import annotations

import shutil

import onnx
from cli_projects import run_job
from latency_fakes import fixed_latency

MODEL = "model_opset17.onnx"


def test_an_edit_after_the_choice_is_counted_alone_and_the_way_back_chooses_again(qtbot, window, open_file, corpus,
                                                                                  tmp_path, monkeypatch):
    # fixed latency measurements: timed, the second F5's latency placement could keep other attention MatMuls float
    # than the first's on a loaded machine, each an edit of its own counted since the choice
    fixed_latency(monkeypatch)
    for name in (MODEL, "calib.npz"):
        shutil.copy(corpus / "digits_transformer" / name, tmp_path / name)
    open_file(window, tmp_path / MODEL)
    window.calibration.samples.setValue(24)
    window.calibration.analysis_samples.setValue(8)
    preset = window.doc.recipe.model_copy(deep=True)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)  # F5 chooses first
    assert state == "succeeded", res
    chosen = window.doc.recipe
    label = res["choice"].get("label") or res["choice"]["chosen"]  # "compute+mse", with any 16-bit units
    assert label.startswith("compute+mse")
    after = f"Recipe choice skipped: the choice already ran on this model ({label}) and the recipe was edited after it"
    assert chosen.op_types == ["MatMul", "Gemm"] and len(chosen.rules) == 1  # the choice's own edits

    matmul = next(n.name for n in onnx.load(tmp_path / MODEL).graph.node if n.op_type == "MatMul")
    window.focus_node(matmul)
    window.inspector.roles["activation"].dtype.setCurrentText("int16")  # the user's one edit
    assert len(window.doc.recipe.overrides) == len(chosen.overrides) + 1  # (the latency check's are the app's)

    state, res = run_job(qtbot, window, window.act_calibrate.trigger)  # F5: calibrated as it is
    assert state == "succeeded", res
    status = window.calibration.status.text()  # the whole text (the status bar's line points to it)
    assert f"{after} (1 edit since), so the recipe is used as it is; to choose again from the preset, undo back to " \
           f"before 'Choose recipe: {label}' (Edit > Undo, Ctrl+Z; the later edits go too), then Run > Choose " \
           "Recipe (Ctrl+F5)." in status, status  # was "the recipe has 3 edits"
    assert "recipe has" not in status and window.doc.recipe.overrides[matmul].activation.dtype == "int16"

    state, res = run_job(qtbot, window, window.act_choose.trigger)  # Ctrl+F5 on the edited recipe
    assert state == "succeeded", res
    status = window.status_label.text()
    assert status.startswith(f"{after} (1 edit since), so the recipe is used as it is;"), status
    assert "sets rules, overrides or op types" not in status  # was the core's reason, as if all were the user's

    # the advice: undo back to before the choice (the preset), then Ctrl+F5 chooses again
    stack = window.doc.undo_stack
    stack.setIndex(next(i for i in range(stack.count()) if stack.text(i) == f"Choose recipe: {label}"))
    assert window.doc.recipe == preset
    state, res = run_job(qtbot, window, window.act_choose.trigger)
    assert state == "succeeded", res
    assert window.status_label.text().startswith("Recipe choice: compute+mse"), window.status_label.text()
    again = window.doc.recipe
    assert again.op_types == chosen.op_types and again.rules == chosen.rules and matmul not in again.overrides
