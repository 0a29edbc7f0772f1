"""F5 runs the recipe choice on a preset with node overrides, keeps them, and Ctrl+Z restores them.

One inspector edit (a node's activations to int16) made F5 say "Recipe choice skipped: the recipe has 1 edit"
and calibrate the preset with that edit as it was (ppocrv4_rec: output SQNR 9.6 dB, the choice's ~11.5).
"""

from __future__ import annotations

import shutil

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from test_app_flow import run_job, search


def test_f5_chooses_around_one_node_edit_and_undo_restores_it(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # the latency check keeps nothing float: the recipe is the choice's alone
    shutil.copy(EXAMPLE / "digits_cnn.onnx", tmp_path / "model.onnx")
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", tmp_path / "calib.npz")
    open_file(window, tmp_path / "model.onnx")
    assert window.doc.data == {"kind": "npz", "path": str(tmp_path / "calib.npz")}
    window.calibration.choose_first.setChecked(True)
    window.calibration.samples.setValue(40)
    window.calibration.analysis_samples.setValue(8)
    assert search(qtbot, window, "/f/f.3/Conv") == ["/f/f.3/Conv"]
    window.inspector.roles["activation"].dtype.setCurrentText("int16")  # the user's one edit
    edited = window.doc.recipe.model_copy(deep=True)
    assert list(edited.overrides) == ["/f/f.3/Conv"] and not edited.bias_correction
    assert window.runs.will_choose() and window.runs.choice_skip_note() == ""

    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    choice = res["choice"]
    assert choice is not None and choice["skipped"] is None and choice["chosen"] == "compute+mse"
    recipe = window.doc.recipe
    assert recipe.bias_correction and recipe.overrides["/f/f.3/Conv"] == edited.overrides["/f/f.3/Conv"]
    assert set(recipe.overrides) == {"/f/f.3/Conv", *choice["promoted"]}
    assert window.doc.plan.units["/f/f.3/Conv"].config.activation.dtype == "int16"
    status = window.calibration.status.text()
    assert "Recipe choice: compute+mse (output SQNR on 10 held-out rows" in status and "skipped" not in status
    assert "Ctrl+Z restores the recipe the choice started from" in status

    window.act_undo.trigger()  # the choice was one edit: back to the user's recipe, its edit included
    assert window.doc.recipe == edited
    assert not window.runs.will_choose()  # the recipe the choice ran on is calibrated as it is next time
