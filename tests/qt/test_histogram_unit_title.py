"""The histogram's title names the unit clicked and the tensor drawn: a click on p2o.Conv.32's bar showed a
histogram titled only "p2o.Add.227" (the unit's output after the Add fused into it)."""

from __future__ import annotations

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from test_histogram_clip_notes import _calibrate

CONV = "/f/f.3/Conv"  # quantized whatever the latency placement measures (/f/f.0/Conv, one input channel, is probed)


def test_histogram_title_names_the_unit_and_its_output_tensor(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # CONV quantized also where digits_cnn measures slower quantized
    win = window
    _calibrate(qtbot, win, open_file, EXAMPLE / "digits_cnn.onnx", samples=8)
    row = next(r for r in win.doc.errors if r.node == CONV)
    assert row.tensor and row.tensor != CONV  # the unit's output is another node's (its fused activation)
    index = [r.node for r in win.errors.rows].index(CONV)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.errors.click_row(index)
    text = win.errors.hist_title.text()
    assert text.startswith(f"{CONV} \u2192 output {row.tensor}: "), text
    assert win.errors.hist["tensor"] == row.tensor and win.errors.hist["unit"] == CONV
