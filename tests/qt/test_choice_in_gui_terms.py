"""After F5's recipe choice keeps units float, the app says so in its own terms and shows where they are.

The status after a choice ran to about 6 lines, was cut off in the status bar and named a CLI flag
("--no-auto quantizes every unit at 8 bits"); it said "The Recipe panel shows it" while that panel listed
only rules, and the units the choice kept float are overrides. Now the status bar holds a short line (the
whole text in its tooltip and the Calibration panel), the text names the Calibration panel's "Choose the
recipe first" and Ctrl+Z instead of flags, and points to the Recipe panel's Node overrides. Model: a MatMul
chain whose first MatMul reads an outlier (the choice keeps it float); the latency measurements are
replaced (latency_fakes: quantized faster, so the latency check keeps nothing float), not timed.
"""

from __future__ import annotations

from cli_projects import run_job
from latency_fakes import slow_quantized
from outlier_chain import outlier_chain


def test_choice_text_and_overrides(qtbot, window, open_file, monkeypatch, tmp_path):
    slow_quantized(monkeypatch, ratio=0.5)  # quantized faster: the latency check keeps nothing float
    open_file(window, outlier_chain(tmp_path))
    assert window.calibration.choose_first.isChecked()
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    promoted = res["choice"]["promoted"]
    assert promoted == ["mm0"] and not res["latency_kept"]
    full = window.calibration.status.text()
    assert full.startswith(f"Done: {len(window.doc.errors)} node units analysed. Recipe choice: ")
    assert "--" not in full  # no CLI flag
    assert "1 unit kept float (the Recipe panel lists them under Node overrides)" in full
    assert "Choose the recipe first" in full and "Ctrl+Z restores the recipe the choice started from" in full
    # the status bar: one short line, the whole text in its tooltip
    short = window.status_label.text()
    assert short == (f"Done: {len(window.doc.errors)} node units analysed. Recipe choice: "
                     f"{res['choice']['label']} (Ctrl+Z undoes). Details: Calibration panel.")
    assert window.status_label.toolTip() == full
