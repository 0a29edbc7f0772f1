"""Colour by SQNR (and by own noise) after a calibration that quantized nothing says why there is no figure: the
status line read "No SQNR yet: calibrate first (F5)." right after the calibration (seen in the real window of
scripts/screenshot.sh on digits_cnn, where the latency check kept every unit float), which asks for the very
thing just done. The latency measurements are replaced (latency_fakes), not timed."""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_job
from latency_fakes import slow_quantized

MODEL = EXAMPLE / "digits_cnn.onnx"


def test_colour_by_sqnr_after_nothing_quantized(qtbot, window, open_file, monkeypatch):
    open_file(window, MODEL)
    window.color_by_sqnr()
    assert window.status_label.text() == "No SQNR yet: calibrate first (F5)."  # before a calibration: as it was
    slow_quantized(monkeypatch)
    window.calibration.choose_first.setChecked(False)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert res["latency_kept"] and not window.doc.errors
    window.color_by_sqnr()
    assert window.status_label.text() == ("No SQNR: nothing is quantized (the latency check kept every unit float; "
                                          "the Errors panel says what to do).")
    window.color_by_local()
    assert window.status_label.text() == ("No local SQNR: nothing is quantized (the latency check kept every unit "
                                          "float; the Errors panel says what to do).")
    window.act_undo.trigger()  # the latency check's edit undone: the results are no longer of this recipe
    window.color_by_sqnr()
    assert window.status_label.text() == "No SQNR yet: calibrate first (F5)."
