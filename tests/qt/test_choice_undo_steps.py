"""After a calibration that chose the recipe and then kept units float for latency, the status line says how
many Ctrl+Z restore the recipe the choice started from.

digits_transformer (latency fixed: attention's MatMuls measured slower quantized): F5 pushed two edits, "Choose
recipe: compute+mse + 1 unit kept float" then "Keep 4 units float (latency check)", while the status bar read
"Recipe choice: compute+mse + 1 unit kept float (Ctrl+Z undoes)" and the Calibration panel "Ctrl+Z restores
the recipe the choice started from": one Ctrl+Z gave the chosen recipe, not the one F5 started from. Both now
say Ctrl+Z twice, and two Ctrl+Z give that recipe back exactly.
"""

from __future__ import annotations

import shutil

from cli_projects import run_ok
from latency_fakes import fixed_latency

MODEL = "model_opset17.onnx"


def test_two_edits_are_said_as_ctrl_z_twice_and_two_undos_restore_the_start(qtbot, window, open_file, corpus,
                                                                             tmp_path, monkeypatch):
    fixed_latency(monkeypatch)
    folder = tmp_path / "m"
    folder.mkdir()
    for name in (MODEL, "calib.npz"):
        shutil.copy(corpus / "digits_transformer" / name, folder / name)
    open_file(window, folder / MODEL)
    window.calibration.samples.setValue(24)
    window.calibration.analysis_samples.setValue(8)
    window._on_spec_changed()
    start = window.doc.recipe.to_json()
    stack = window.doc.undo_stack
    before = stack.index()
    run_ok(qtbot, window, window.act_calibrate.trigger)
    assert [stack.text(i) for i in range(before, stack.count())] == [
        "Choose recipe: compute+mse + 1 unit kept float", "Keep 4 units float (latency check)"]
    short = window.status_label.text()
    assert short.startswith("Done: 9 node units analysed. Recipe choice: compute+mse + 1 unit kept float (Ctrl+Z twice "
                            "undoes). The latency check kept 4 units float.")  # failed before: (Ctrl+Z undoes)
    full = window.calibration.status.text()
    assert (" Ctrl+Z twice (the first undoes the latency check's units) restores the recipe the choice started from "
            "(the preset and your node overrides; F5 then calibrates it as it is);") in full
    assert "Ctrl+Z restores" not in full
    window.act_undo.trigger()
    assert window.doc.recipe.to_json() != start  # the chosen recipe, its latency units undone
    window.act_undo.trigger()
    assert window.doc.recipe.to_json() == start and stack.index() == before
