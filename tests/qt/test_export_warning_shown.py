"""The status bar shows an export's latency warning, not only its tooltip. The README tutorial's int16 Convs
(overrides of their own, which the latency check never keeps float) on this Intel Xeon: Calibrate gave 4 of 5
units, and File > Export wrote that model as it is, its reused latency check 2.47x float with "Warning:
quantization does not pay at this size ...". The status bar cut the line at "... written as it is (its ...": the
warning was in the tooltip alone. The latency measurements are replaced (latency_fakes), not timed."""

from __future__ import annotations

from bundled_example import EXAMPLE
from cli_projects import run_ok
from latency_fakes import slow_quantized

MODEL = EXAMPLE / "digits_cnn.onnx"



def test_the_status_bar_leads_with_a_reused_slowdown(qtbot, window, open_file, monkeypatch, tmp_path):
    slow_quantized(monkeypatch, ratio=1.5, float_s=2e-5)  # a 20 us model: "does not pay at this size"
    open_file(window, MODEL)
    window.calibration.choose_first.setChecked(False)
    window.search.setText("Conv")  # the tutorial's step 2: every Conv's activation int16, an override of its own
    window.run_search()
    window.inspector.roles["activation"].dtype.setCurrentText("int16")
    run_ok(qtbot, window, window.act_calibrate.trigger)
    assert window.doc.errors  # the Convs stay quantized: the latency check never keeps an override float
    out = tmp_path / "int16.onnx"
    res = run_ok(qtbot, window, lambda: window.runs.export(out))
    assert res["reused"]
    short, full = window.status_label.text(), window.status_label.toolTip()
    assert f"Done: exported {out}" in short and "Warning: it measures 1.50x float, quantization does not pay at this " \
        "size (the whole line in the tooltip)." in short, short
    assert "Warning: quantization does not pay at this size" in full and "View > Open Exported Model" in full
    assert len(short) < len(full)
