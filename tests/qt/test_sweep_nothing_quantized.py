"""The Sensitivity panel of a sweep where every unit stayed float says that nothing was quantized, not a dB figure.
With every unit of digits_cnn excluded (as when the latency check keeps them float) it read "0 units, measured end to end; all quantized:
1xx.xx dB over the first 8 calibration rows.": the float rounding between the float model run optimised and the
written one run as written, no quantization figure. The job's count of quantized units is kept with the sweep in a
project."""

from __future__ import annotations

from test_app_flow import run_job, search

from workbench.qt.sweep_text import NOTHING_QUANTIZED


def test_a_sweep_of_an_all_float_model_says_nothing_was_quantized(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    search(qtbot, win, "*")  # every node selected, then kept float in the inspector
    win.inspector.exclude.click()
    assert win.doc.plan.units and all(u.excluded for u in win.doc.plan.units.values())
    win.calibration.choose_first.setChecked(False)
    win.calibration.samples.setValue(8)
    state, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    assert res["quantized"] == 0 and res["sweep"]["rows"] == []
    text = win.sensitivity.summary.text()
    assert text == NOTHING_QUANTIZED
    assert "dB" not in text and "Nothing was quantized" in text

    saved = win.doc.sensitivity_json()  # kept in a project's results and read back
    assert saved["quantized"] == 0
    win.doc.set_sensitivity(saved)
    assert win.sensitivity.summary.text() == NOTHING_QUANTIZED
